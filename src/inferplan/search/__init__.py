"""Deployments under load: tail latency (queueing approximation and simulation) and the search."""
