"""The memory configurations of each chip sold in several (``catalog/memory_config.py``), as the web
page offers them: for a chosen accelerator, the sizes it is sold in, each under the id that plans it
and that answers name, worded, with the one an unsized name plans (the catalogue record) marked."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from inferplan.catalog.loader import Catalog
from inferplan.catalog.memory_config import configured
from inferplan.report.sources import SourceNote, source_notes
from inferplan.units import fmt_gb, fmt_gb_per_s


class MemoryConfigurationView(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    id: str  # what a request names to plan this size, and what its answer names: apple-m4-max-64gb
    name: str  # "Apple M4 Max 64 GB"
    label: str  # "64 GB, 546 GB/s"
    default: bool  # the size the accelerator's own id plans (the catalogue record, its largest)
    sources: list[SourceNote] = []  # where the size and bandwidth come from


class ConfigurableAcceleratorView(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    accelerator: str  # the record's id, as the catalogue lists it
    name: str
    configurations: list[MemoryConfigurationView]  # smallest first


def memory_configuration_views(catalog: Catalog) -> list[ConfigurableAcceleratorView]:
    """Every accelerator with ``memory_configurations``, in catalogue order, with its sizes."""
    views = []
    for base in catalog.accelerators:
        if not base.memory_configurable:
            continue
        rows = []
        for configuration in base.memory_configurations:
            sized = configured(base, configuration)
            rows.append(MemoryConfigurationView(
                id=sized.id, name=f"{base.name} {fmt_gb(configuration.memory_bytes.value, 'g')}",
                label=(f"{fmt_gb(sized.memory_bytes.value, 'g')}, "
                       f"{fmt_gb_per_s(sized.memory_bandwidth_bytes_per_s.value, 'g')}"),
                default=sized.id == base.id,
                sources=source_notes(catalog, sized.memory_bytes, sized.memory_bandwidth_bytes_per_s)))
        views.append(ConfigurableAcceleratorView(accelerator=base.id, name=base.name, configurations=rows))
    return views
