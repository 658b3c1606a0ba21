"""What fits: parameter counts, weight bytes, KV cache and recurrent state per layer kind, each
engine's memory budget, model names and config paths resolved to specs with counted
parameters, and ``fit(Deployment) -> MemoryFit`` (plus the what-fits matrix)."""
