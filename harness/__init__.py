"""The apmbench-grpc harness: datasets, schedule, runtimes, runner, scoring, reports, CLI."""

__version__ = "0.1.0"
