"""What drives a whole run: evaluate, merge, the Ray backend, scoring, compare, the HTML view."""
