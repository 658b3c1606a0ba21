"""What fits: parameter counts, weight bytes, KV cache and recurrent state per layer kind, each
engine's memory budget, and ``fit(Deployment) -> MemoryFit`` (plus the what-fits matrix)."""
