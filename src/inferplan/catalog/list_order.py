"""The order the catalogue's lists are shown in (``inferplan gpus``/``models``, GET /api/catalog/KIND, the
page's lists): accelerators as a buyer scans them — by vendor, then by class (a card for a desktop
before a workstation card, a unified-memory machine, a desktop superchip, a server's PCIe card, a
baseboard module, a superchip and a cloud-only part), then by memory; models by family, then size."""

from __future__ import annotations

from collections.abc import Iterable

from inferplan.catalog.accelerator_schema import Accelerator
from inferplan.catalog.schema import ModelCard

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


def model_order(models: Iterable[ModelCard]) -> list[ModelCard]:
    """Models by family (alphabetical), then total parameters (a model without a stated count after its
    family's others), then name: Qwen3-0.6B through Qwen3.8-2.4T together, smallest first."""
    def key(m: ModelCard) -> tuple:
        total = m.total_params.value if m.total_params is not None else None
        return m.family.lower(), total is None, total or 0.0, m.name.lower()
    return sorted(models, key=key)
