"""The self-contained HTML report and run viewer (`apmbench-grpc view`)."""
