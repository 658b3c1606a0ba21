"""A stated memory configuration of a part sold in several (``M4 Max 64GB``, ``apple-m4-max-64gb``).

An Apple or Ryzen AI Max chip is one catalogue record at its largest configuration
(``memory_configurable: true``); a name that ends in a memory size plans the same chip with that
much memory, under the id ``<record>-<N>gb`` so that the answer names what was planned and a plan
that passes the id on resolves it again. The bandwidth and compute stay the record's.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from inferplan.errors import AmbiguousNameError, UnknownHardwareError

if TYPE_CHECKING:
    from inferplan.catalog.registry import Registry
    from inferplan.catalog.schema import Accelerator

# "M4 Max 64GB", "apple-m4-max-64gb", "M4 Max 64 GB", "m4-max:64gb"
SIZED_NAME = re.compile(r"^(?P<base>.*?\S)[\s:_-]*(?P<size>\d+(?:\.\d+)?)\s*gb$", re.IGNORECASE)
SMALLEST_CONFIGURATION_GB = 8  # assumed: no chip of these lines is sold with less


def sized_accelerator(records: "Registry[Accelerator]", name: str, field_name: str) -> "Accelerator | None":
    """The configurable part ``name`` names with a memory size (None: the name states no size, or
    names no configurable part); a size the part is not sold beyond raises, naming what is allowed."""
    match = SIZED_NAME.match(name.strip())
    if match is None:
        return None
    try:
        base = records.get(match["base"], field_name=field_name, error=UnknownHardwareError)
    except (UnknownHardwareError, AmbiguousNameError):  # the rest of the name names no single part: the caller's own error stands
        return None
    if not base.memory_configurable:
        return None
    size_gb = float(match["size"])
    largest_gb = base.memory_bytes.value / 1e9
    if not SMALLEST_CONFIGURATION_GB <= size_gb <= largest_gb:
        raise UnknownHardwareError(
            f"{base.name} is not sold with {size_gb:g} GB (its largest configuration is {largest_gb:g} GB)",
            field=field_name, allowed=f"{base.id}-<N>gb with N from {SMALLEST_CONFIGURATION_GB} to {largest_gb:g}")
    return configured(base, size_gb)


def configured(base: "Accelerator", size_gb: float) -> "Accelerator":
    """``base`` with ``size_gb`` GB of memory, as a user stated their machine's configuration."""
    if size_gb == base.memory_bytes.value / 1e9:
        return base
    stated = base.memory_bytes.model_validate({
        "value": size_gb, "unit": "GB", "kind": "assumed", "source": base.memory_bytes.source,
        "note": f"the {size_gb:g} GB configuration, as stated; the record's own is {base.memory_bytes.value / 1e9:g} GB"})
    label = f"{size_gb:g}gb"
    note = (f"{base.name} with {size_gb:g} GB as stated: bandwidth and compute are the catalogue record's "
            f"({base.memory_bandwidth_bytes_per_s.value / 1e9:g} GB/s); a smaller configuration of some chips "
            "has a narrower memory bus")
    return base.model_copy(update={
        "id": f"{base.id}-{label}", "name": f"{base.name} {size_gb:g} GB", "aliases": (), "memory_bytes": stated,
        "memory_reported_bytes": None, "configuration_of": base.id, "notes": (*base.notes, note)})
