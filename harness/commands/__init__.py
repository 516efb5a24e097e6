"""One module per `apmbench-grpc` command; `apmbench.harness.cli` assembles them."""
