"""Perception shared by the reference systems: reading the synthetic world's frames from pixels."""
