"""The KV cache a start can get on an integrated GPU whose engine release sizes it from the device's free memory.

On a CUDA integrated GPU (``Accelerator.integrated_gpu``: GB10 in the DGX Spark, Jetson Thor) cudaMemGetInfo
counts the OS's page cache as used memory. An engine release that reads that figure (the rule's
``free_memory_queries`` entry says ``device``) counts the page cache the checkpoint leaves behind as memory in
use outside torch, so the KV cache it sizes shrinks by that much, times the share of free memory the rule gives
the KV cache. How much of the checkpoint the page cache holds at that moment changes from one start to the next,
so no single figure is stated: the plan's figure (page cache dropped) is the upper end, and the lower end takes
the page cache as the whole checkpoint, or as all the memory the engine leaves, whichever is less.
"""

from __future__ import annotations

from dataclasses import dataclass

from inferplan.catalog.free_memory import FreeMemoryQuery
from inferplan.catalog.memory_rules import MemoryRule
from inferplan.catalog.schema import Accelerator
from inferplan.units import GiB


@dataclass(frozen=True)
class PageCacheRange:
    low_bytes_per_gpu: float  # the checkpoint (or all the memory left) in the page cache; may be negative: no start
    high_bytes_per_gpu: float  # the plan's figure: no page cache
    page_cache_bytes: float  # the page cache taken at the low end
    note: str


def device_free_memory_query(accel: Accelerator | None, rule: MemoryRule, release: str | None) -> FreeMemoryQuery | None:
    """The rule's free-memory query at ``release`` where ``accel`` is an integrated GPU and the release reads the
    device's free memory (None: a GPU with memory of its own, a release reading the OS's available memory, or
    one whose reading is not stated)."""
    if accel is None or not accel.integrated_gpu:
        return None
    query = rule.free_memory_query(release)
    return query if query is not None and query.query == "device" else None


def page_cache_share(rule: MemoryRule, memory_fraction: float) -> float:
    """The share of a byte of page cache the KV cache loses: the fraction where the KV cache is a fraction of the
    free memory (TensorRT-LLM's free_gpu_memory_fraction), all of it where the page cache counts as non-torch
    memory subtracted from a fraction of the total (vLLM)."""
    of_free = rule.budget == "of_free_after_weights" or rule.fraction_of == "free_at_start"
    return memory_fraction if of_free else 1.0


def page_cache_range(accel: Accelerator | None, engine_name: str, rule: MemoryRule, release: str | None, *,
                     kv_bytes_per_gpu: float, total_bytes: float, in_use_bytes_per_gpu: float,
                     checkpoint_bytes: float, memory_fraction: float) -> PageCacheRange | None:
    """The KV cache per GPU between a start whose page cache holds the checkpoint and one after the page cache is
    dropped (None where the engine's reading counts no page cache). ``in_use_bytes_per_gpu`` is what the engine
    holds when it reads the free memory (weights, activations, runtime, CUDA graphs): the page cache fills at
    most the rest of ``total_bytes``."""
    query = device_free_memory_query(accel, rule, release)
    if query is None:
        return None
    cached = min(checkpoint_bytes, max(total_bytes - in_use_bytes_per_gpu, 0.0))
    share = page_cache_share(rule, memory_fraction)
    low = kv_bytes_per_gpu - share * cached
    which = f"{engine_name} {release}" if release else f"{engine_name} {rule.releases}"
    lost = f"{share:g} × {cached / GiB:.2f} GiB" if share != 1.0 else f"{cached / GiB:.2f} GiB"
    drop = (f"; drop the page cache before starting: {accel.page_cache_drop_command}" if accel.page_cache_drop_command
            else "; drop the page cache before starting")
    return PageCacheRange(low_bytes_per_gpu=low, high_bytes_per_gpu=kv_bytes_per_gpu, page_cache_bytes=cached, note=(
        f"{accel.name} is an integrated GPU and {which} sizes the KV cache from the device's free memory, which counts "
        f"the page cache as used: with the checkpoint still in the page cache after loading (up to "
        f"{cached / GiB:.2f} GiB) the KV cache loses {lost}, so it is between {low / GiB:.2f} and "
        f"{kv_bytes_per_gpu / GiB:.2f} GiB per GPU, the plan's figure being the one with no page cache"
        f"{' (at or below zero the engine finds no room for the KV cache and stops at start-up)' if low <= 0 else ''}{drop}"))


def cold_start_comment(accel: Accelerator | None, engine_name: str, rule: MemoryRule, release: str | None) -> str | None:
    """A launch script's comment line for a start whose KV cache the page cache shrinks (None: not such a start)."""
    if device_free_memory_query(accel, rule, release) is None:
        return None
    drop = f": {accel.page_cache_drop_command}" if accel.page_cache_drop_command else ""
    return (f"# {accel.name} is an integrated GPU and {engine_name} sizes the KV cache from the device's free memory, "
            f"which counts the page cache as used; drop the page cache before starting{drop}")
