"""The share of prompt tokens a search or a simulation takes as served from the prefix cache, said in
words: a workload preset's figure is an assumption the user should see (``perf`` takes none unless
told), a stated one is the user's own."""

from __future__ import annotations


def prefix_cache_text(hit_rate: float, *, preset: str | None, stated: bool) -> str | None:
    """One line for a header, or None when no prompt token is taken as cached and none was stated."""
    if stated:
        return f"prefix cache: {hit_rate:.0%} of prompt tokens served from cache (stated)"
    if preset is None or hit_rate == 0:
        return None
    return (f"prefix cache: {hit_rate:.0%} of prompt tokens assumed served from cache (preset {preset}; set "
            "prefix_cache_hit_rate to change it)")
