"""Configuration search and queueing: which deployment meets a service target at the least cost."""
