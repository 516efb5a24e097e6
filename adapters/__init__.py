"""Server side of apmbench-grpc: the SDK method authors subclass, and reference systems."""
