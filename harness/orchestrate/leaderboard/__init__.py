"""`apmbench-grpc leaderboard`: a static site comparing methods on every suite."""
