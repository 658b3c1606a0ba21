"""A stated memory configuration of a part sold in several (``M4 Max 64GB``, ``apple-m4-max-64gb``).

An Apple or Ryzen AI Max chip is one catalogue record at its largest configuration, listing the
configurations it is sold in (``memory_configurations``, each with its source); a name that ends in one
of those sizes plans the same chip with that much memory, under the id ``<record>-<N>gb`` so that the
answer names what was planned and a plan that passes the id on resolves it again. The bandwidth is the
configuration's where its source gives one (a smaller bin with a narrower bus), else the record's;
the compute stays the record's.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

from inferplan.errors import AmbiguousNameError, UnknownHardwareError
from inferplan.units import GB, fmt_gb_per_s

if TYPE_CHECKING:
    from inferplan.catalog.memory_config_schema import MemoryConfiguration
    from inferplan.catalog.registry import Registry
    from inferplan.catalog.schema import Accelerator

# "M4 Max 64GB", "apple-m4-max-64gb", "M4 Max 64 GB", "m4-max:64gb"
SIZED_NAME = re.compile(r"^(?P<base>.*?\S)[\s:_-]*(?P<size>\d+(?:\.\d+)?)\s*gb$", re.IGNORECASE)


def sized_accelerator(records: "Registry[Accelerator]", name: str, field_name: str) -> "Accelerator | None":
    """The configurable part ``name`` names with a memory size (None: the name states no size, or
    names no configurable part); a size the part is not sold in raises, naming the sizes it is."""
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
    for configuration in base.memory_configurations:
        if math.isclose(configuration.memory_bytes.value / GB, size_gb):
            return configured(base, configuration)
    raise UnknownHardwareError(
        f"{base.name} is not sold with {size_gb:g} GB (it is sold with {', '.join(f'{gb:g}' for gb in _sizes_gb(base))} GB)",
        field=field_name, allowed=configuration_names(base))


MAC_PRODUCT = re.compile(r"^\s*(mac\s*mini|mac\s*studio|mac\s*pro|macbook(\s*(air|pro))?|imac)\b", re.IGNORECASE)


def mac_chip(name: str) -> str | None:
    """What follows a Mac's product name where it names a chip (``Mac Studio M3 Ultra 96GB`` -> ``M3 Ultra 96GB``;
    None: no product name, or only a memory size after it)."""
    match = MAC_PRODUCT.match(name)
    rest = name[match.end():].strip(" ,-") if match else ""
    return rest if rest and not re.fullmatch(r"\d+(?:\.\d+)?\s*gb", rest, re.IGNORECASE) else None


def mac_product_refusal(records: "Registry[Accelerator]", name: str, field_name: str) -> UnknownHardwareError | None:
    """A name of a Mac (``Mac mini 24GB``) rather than of its chip: the refusal naming the Apple chips the catalogue
    has in that memory size (None: ``name`` names no Mac)."""
    if MAC_PRODUCT.match(name) is None:
        return None
    match = SIZED_NAME.match(name.strip())
    size_gb = float(match["size"]) if match else None
    chips = [f"'{base.name.removeprefix('Apple ')} {gb:g}GB'" for base in records if base.vendor == "apple"
             and base.memory_configurable for gb in _sizes_gb(base) if size_gb and math.isclose(gb, size_gb)]
    return UnknownHardwareError(
        f"{name.strip()!r} names a Mac, not its chip: name the chip and its memory, as 'M4 Pro 24GB'",
        field=field_name, allowed=", ".join(chips) if chips else "an Apple chip and its memory (inferplan catalog "
                                                                   "list accelerators)")


def _sizes_gb(base: "Accelerator") -> list[float]:
    return [c.memory_bytes.value / GB for c in base.memory_configurations]


def configuration_names(base: "Accelerator") -> str:
    """The names of ``base``'s configurations: ``apple-m4-max-36gb, -48gb, -64gb, -128gb``."""
    first, *rest = _sizes_gb(base)
    return ", ".join([f"{base.id}-{first:g}gb", *(f"-{gb:g}gb" for gb in rest)])


def configured(base: "Accelerator", configuration: "MemoryConfiguration") -> "Accelerator":
    """``base`` in ``configuration``, as a user stated their machine's: its memory, and its bandwidth
    where the configuration's source gives one (else the record's)."""
    size_gb = configuration.memory_bytes.value / GB
    bandwidth = configuration.memory_bandwidth_bytes_per_s or base.memory_bandwidth_bytes_per_s
    if configuration.memory_bytes.value == base.memory_bytes.value and bandwidth == base.memory_bandwidth_bytes_per_s:
        return base
    whose = "this configuration's" if configuration.memory_bandwidth_bytes_per_s else "the catalogue record's"
    note = (f"{base.name} with {size_gb:g} GB as stated: bandwidth {fmt_gb_per_s(bandwidth.value, 'g')} ({whose}); "
            "compute is the catalogue record's")
    return base.model_copy(update={
        "id": f"{base.id}-{size_gb:g}gb", "name": f"{base.name} {size_gb:g} GB", "aliases": (),
        "memory_bytes": configuration.memory_bytes, "memory_bandwidth_bytes_per_s": bandwidth,
        "memory_reported_bytes": None, "configuration_of": base.id, "memory_configurations": (),
        "notes": (*base.notes, note)})
