"""Systems in containers: the Docker runtime behind `evaluate --image`, and the image builder.

Only the runtime modules import the docker SDK; `settings` is plain data, so the
CLI can parse container options without loading it.
"""
