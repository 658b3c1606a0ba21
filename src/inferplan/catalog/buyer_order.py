"""The order a buyer scans accelerators in: by vendor, then by class (a card for a desktop before a
workstation card, a unified-memory machine, a server's PCIe card, a baseboard module, a superchip and
a cloud-only part), then by memory — the order every list of accelerators is shown in."""

from __future__ import annotations

from collections.abc import Iterable

from inferplan.catalog.accelerator_schema import Accelerator

# form_factor -> class rank: what a person buys for a desk first, what only a data centre (or a cloud) holds last
CLASS_RANK = {
    "consumer": 0,
    "workstation": 1,
    "soc": 2,
    "desktop-superchip": 3,
    "pcie": 4,
    "sxm": 5,
    "oam": 5,
    "superchip": 6,
    "cloud-only": 7,
}


def class_rank(form_factor: str) -> int:
    """The class a form factor falls in; one not named above comes after every named class."""
    return CLASS_RANK.get(form_factor, len(CLASS_RANK))


def buyer_order(accelerators: Iterable[Accelerator]) -> list[Accelerator]:
    """Accelerators by vendor (alphabetical), class, memory, bandwidth, then name."""
    return sorted(accelerators, key=lambda a: (a.vendor.lower(), class_rank(a.form_factor), a.memory_bytes.value,
                                               a.memory_bandwidth_bytes_per_s.value, a.name.lower()))
