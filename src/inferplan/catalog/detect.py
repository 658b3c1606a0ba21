"""What this machine holds, matched to the catalogue: ``detect()`` runs the vendor tools that are on
PATH (each with a timeout; a missing or failing tool reads as nothing), ``read_machine`` turns their
outputs into a ``LocalMachine`` (pure, so tests feed it recorded outputs), and ``with_local`` adds
the machine's accelerator to a catalogue under the id ``local`` so every ``--gpu`` can name it.

A card is matched by the longest run of whole words of a catalogue name or alias inside the name
its tool reports (``NVIDIA H100 80GB HBM3`` → ``h100-sxm``). Where the read memory differs from
the matched record's (a MIG slice, a smaller Apple bin) the local record keeps the matched part's
bandwidth and compute (scaled by the slice's share of compute for MIG) with the memory read. A card
no catalogue name matches is planned with its read memory and, stated as an assumption, the
bandwidth and compute of the catalogue part of its vendor with the nearest memory.
"""

from __future__ import annotations

import dataclasses
import functools
import platform
import shutil
import subprocess
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict

from inferplan.catalog import detect_parse as p
from inferplan.catalog.loader import Catalog
from inferplan.catalog.registry import Registry, word_list
from inferplan.catalog.schema import Accelerator
from inferplan.errors import UnknownHardwareError

TOOLS_FILE = Path(__file__).with_name("detect_tools.yaml")
LOCAL_ID = "local"
TOOL_TIMEOUT_S = 10
MEMORY_MATCH_TOLERANCE = 0.15  # read memory within 15% of the record's: the same part (drivers reserve some)
MIG_SLICES = 7  # an A100/H100 divides into seven compute slices (NVIDIA MIG user guide)
LOCAL_SOURCE = "local-detect"  # numbers read from this machine's own tools


class CardGroup(BaseModel):
    """Identical accelerators (or MIG slices) of this machine and what the catalogue knows of them."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    name: str
    count: int
    memory_bytes: int
    matched: str | None  # catalogue accelerator id; None: no catalogue name matches
    label: str  # "matched h100-sxm" | "local, derived from a100-80gb (MIG 3g.40gb)" | "local, unmatched"
    indices: tuple[str, ...]
    notes: tuple[str, ...] = ()


class LocalMachine(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    cpu: str | None
    cores: int | None
    ram_bytes: int | None
    groups: tuple[CardGroup, ...]  # largest total memory first
    tools: tuple[str, ...]  # the tools whose output was read
    notes: tuple[str, ...] = ()

    @property
    def has_gpu(self) -> bool:
        return bool(self.groups)


def _run(argv: tuple[str, ...]) -> str | None:
    if shutil.which(argv[0]) is None:
        return None
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


class Tool(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid")

    argv: tuple[str, ...]
    source: str
    darwin: bool = False  # macOS only


@functools.cache
def tools() -> dict[str, Tool]:
    """The commands detect runs (detect_tools.yaml), keyed as ``read_machine`` reads their outputs."""
    data = yaml.safe_load(TOOLS_FILE.read_text(encoding="utf-8"))
    return {key: Tool.model_validate(raw) for key, raw in data["tools"].items()}


def probe() -> dict[str, str]:
    """The outputs of the tools on this machine (key: the tool), nothing for those missing."""
    outputs: dict[str, str] = {}
    darwin = platform.system() == "Darwin"
    for key, tool in tools().items():
        if (darwin or not tool.darwin) and (text := _run(tool.argv)) is not None:
            outputs[key] = text
    meminfo = Path("/proc/meminfo")
    if meminfo.is_file():
        outputs["/proc/meminfo"] = meminfo.read_text(encoding="utf-8", errors="replace")
    return outputs


def readings(outputs: dict[str, str]) -> tuple[list[p.GpuReading], p.HostReading]:
    gpus: list[p.GpuReading] = []
    if "nvidia-smi" in outputs:
        query = p.parse_nvidia_query(outputs["nvidia-smi"])
        gpus += p.mig_slices(query, outputs.get("nvidia-smi -L", ""))
    if "amd-smi" in outputs:
        gpus += p.parse_amd_smi(outputs["amd-smi"])
    elif "rocm-smi" in outputs:
        gpus += p.parse_rocm_smi(outputs["rocm-smi"])
    ram = cpu = cores = None
    if "sysctl" in outputs and "system_profiler" in outputs:
        gpus += p.parse_apple(outputs["sysctl"], outputs["system_profiler"])
        cpu = outputs["sysctl"].splitlines()[0].strip()
        ram = int(outputs["sysctl"].split()[-1])
    if "/proc/meminfo" in outputs:
        ram = p.parse_meminfo(outputs["/proc/meminfo"])
    if "lscpu" in outputs:
        cpu, cores = p.parse_lscpu(outputs["lscpu"])
    return gpus, p.HostReading(cpu=cpu, cores=cores, memory_bytes=ram)


def match_name(catalog: Catalog, name: str) -> Accelerator | None:
    """The catalogue accelerator whose name or alias is the longest run of words in ``name``."""
    words = word_list(name)
    best: tuple[int, Accelerator] | None = None
    for record, lists in catalog.accelerators.word_lists:
        for ws in lists:
            n = len(ws)
            if n and any(words[i:i + n] == ws for i in range(len(words) - n + 1)) and (best is None or n > best[0]):
                best = (n, record)
    return best[1] if best else None


def _record_memory(a: Accelerator) -> float:
    return (a.memory_reported_bytes or a.memory_bytes).value


def _nearest_of_vendor(catalog: Catalog, vendor: str, memory_bytes: int) -> Accelerator | None:
    same = [a for a in catalog.accelerators if a.vendor == vendor and a.status.value in ("shipping", "discontinued")]
    return min(same, key=lambda a: abs(a.memory_bytes.value - memory_bytes), default=None)


def local_record(catalog: Catalog, reading: p.GpuReading) -> tuple[Accelerator | None, str, tuple[str, ...]]:
    """The catalogue record a card is planned with (None: no part of its vendor to stand in),
    its label, and what was assumed."""
    found = match_name(catalog, reading.name)
    memory = reading.memory_bytes
    if found is not None and reading.mig_profile is None:
        if abs(memory - _record_memory(found)) <= MEMORY_MATCH_TOLERANCE * _record_memory(found):
            return found, f"matched {found.id}", ()
        note = (f"{reading.name}: {p.memory_text(memory)} read, the catalogue's {found.id} has "
                f"{p.memory_text(int(_record_memory(found)))}: planned with the memory read and {found.id}'s bandwidth "
                "and compute (another memory configuration may have another bandwidth)")
        return _derived(found, reading, 1.0), f"local, derived from {found.id}", (note,)
    if found is not None:  # a MIG slice: its memory, and its share of the card's compute and bandwidth
        share = int(reading.mig_profile.split("g.")[0]) / MIG_SLICES
        note = (f"MIG {reading.mig_profile} of {found.id}: {p.memory_text(memory)}, {share:.0%} of the card's "
                "compute and bandwidth (assumed in proportion to its compute slices)")
        return _derived(found, reading, share), f"local, derived from {found.id} (MIG {reading.mig_profile})", (note,)
    stand_in = _nearest_of_vendor(catalog, reading.vendor, memory)
    if stand_in is None:
        return None, "local, unmatched", (f"{reading.name}: no catalogue part of vendor {reading.vendor} to plan its speed with",)
    note = (f"{reading.name} is not in the catalogue: planned with its read memory ({p.memory_text(memory)}) and, "
            f"assumed, the bandwidth and compute of {stand_in.id} (the {reading.vendor} part with the nearest memory)")
    return _derived(stand_in, reading, 1.0), "local, unmatched", (note,)


def _derived(base: Accelerator, reading: p.GpuReading, share: float) -> Accelerator:
    read = {"kind": "measured", "source": LOCAL_SOURCE, "note": f"read by detect: {reading.name}"}
    scaled = {"kind": "assumed", "source": LOCAL_SOURCE, "note": f"{share:.0%} of {base.id}'s"}
    update = {
        "id": LOCAL_ID, "name": f"{reading.name} (local)", "aliases": (),
        "memory_bytes": base.memory_bytes.model_validate({"value": float(reading.memory_bytes), **read}),
        "memory_reported_bytes": None,
        "unified_memory": reading.unified_memory or base.unified_memory,
    }
    if share != 1.0:
        update["memory_bandwidth_bytes_per_s"] = base.memory_bandwidth_bytes_per_s.model_validate(
            {"value": base.memory_bandwidth_bytes_per_s.value * share, **scaled})
        update["peak_flop_per_s"] = {k: v.model_validate({"value": v.value * share, **scaled}) for k, v in base.peak_flop_per_s.items()}
        update["scale_up"] = None
    return base.model_copy(update=update)


def read_machine(catalog: Catalog, outputs: dict[str, str]) -> LocalMachine:
    """This machine, from its tools' outputs (pure: tests pass recorded ones)."""
    gpus, host = readings(outputs)
    groups: dict[tuple[str, int, str | None], list[p.GpuReading]] = {}
    for g in gpus:
        groups.setdefault((g.name, g.memory_bytes, g.mig_profile), []).append(g)
    built = []
    for (name, memory, mig), members in groups.items():
        record, label, notes = local_record(catalog, members[0])
        matched = record.id if record is not None and label.startswith("matched") else None
        display = f"{name} MIG {mig}" if mig else name
        built.append(CardGroup(name=display, count=len(members), memory_bytes=memory, matched=matched, label=label,
                               indices=tuple(m.index for m in members), notes=notes))
    built.sort(key=lambda g: -g.count * g.memory_bytes)
    notes = () if built else ("no GPU found (no nvidia-smi, rocm-smi, amd-smi or Apple GPU answered): CPU and RAM only",)
    if len(built) > 1:
        notes += (f"{len(built)} kinds of card: an engine splits a model over identical cards, so each kind is planned "
                  f"on its own; --gpu local is the {built[0].name} ×{built[0].count}",)
    return LocalMachine(cpu=host.cpu, cores=host.cores, ram_bytes=host.memory_bytes, groups=tuple(built),
                        tools=tuple(sorted(outputs)), notes=notes)


def detect(catalog: Catalog) -> LocalMachine:
    """This machine as its tools report it now."""
    return read_machine(catalog, probe())


def local_accelerator(catalog: Catalog, machine: LocalMachine, outputs: dict[str, str] | None = None) -> Accelerator:
    """The record ``--gpu local`` plans with: the machine's first card group, under the id ``local``."""
    if not machine.has_gpu:
        raise UnknownHardwareError("this machine has no GPU the planner can use (detect found CPU and RAM only)",
                                   field="gpu", allowed="a catalogue accelerator id (see `inferplan catalog list accelerators`)")
    group = machine.groups[0]
    gpus, _ = readings(outputs) if outputs is not None else readings(probe())
    reading = next(g for g in gpus if g.index == group.indices[0])
    record, _, _ = local_record(catalog, reading)
    if record is None:
        raise UnknownHardwareError(f"{group.name}: {group.label}, and no catalogue part stands in for its speed",
                                   field="gpu", allowed="a catalogue accelerator id")
    return record.model_copy(update={"id": LOCAL_ID, "aliases": ()})


def with_local(catalog: Catalog, accelerator: Accelerator) -> Catalog:
    """``catalog`` with ``accelerator`` added under the id ``local``."""
    records = {**catalog.accelerators.records, LOCAL_ID: accelerator}
    return dataclasses.replace(catalog, accelerators=Registry(catalog.accelerators.kind, records))


def local_catalog(catalog: Catalog, outputs: dict[str, str] | None = None) -> tuple[Catalog, LocalMachine]:
    """The catalogue with this machine's accelerator as ``local`` (``outputs``: recorded tool outputs)."""
    outputs = probe() if outputs is None else outputs
    machine = read_machine(catalog, outputs)
    return with_local(catalog, local_accelerator(catalog, machine, outputs)), machine


def local_machine_catalog(catalog: Catalog, outputs: dict[str, str] | None = None) -> tuple[Catalog, LocalMachine]:
    """Like ``local_catalog``, but a machine without a usable GPU keeps the catalogue as it is."""
    outputs = probe() if outputs is None else outputs
    machine = read_machine(catalog, outputs)
    if not machine.has_gpu:
        return catalog, machine
    return local_catalog(catalog, outputs)
