"""Read what the machine's own tools say about its accelerators, CPU and memory.

Pure parsers, one per tool output; ``detect.py`` runs the tools and matches what they read to the
catalogue. Each parser takes the tool's text and returns typed readings; output it cannot read is
refused with an ``InvalidScenarioError`` naming the tool and the line, never guessed at.

- NVIDIA: ``nvidia-smi --query-gpu=index,name,memory.total,driver_version,mig.mode.current
  --format=csv,noheader,nounits`` (memory in MiB) and ``nvidia-smi -L`` for MIG slices.
- AMD: ``rocm-smi --showproductname --showmeminfo vram --json`` or ``amd-smi static --json``.
- Apple: ``sysctl -n machdep.cpu.brand_string hw.memsize`` and ``system_profiler
  SPDisplaysDataType -json``.
- Linux: ``/proc/meminfo`` (kB = KiB) and ``lscpu``.
"""

from __future__ import annotations

import json
import re

from pydantic import BaseModel, ConfigDict

from inferplan.errors import InvalidScenarioError
from inferplan.units import GB, GiB, KiB, MiB

# the fields nvidia-smi's query asks for, in order (detect_tools.yaml holds the command)
NVIDIA_QUERY_FIELDS = ("index", "name", "memory.total", "driver_version", "mig.mode.current")

class GpuReading(BaseModel):
    """One accelerator (or MIG slice) as its vendor tool names it."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    index: str  # "0", or "0/MIG 3g.40gb/1" for a MIG slice
    name: str  # as the tool reports it (NVIDIA H100 80GB HBM3)
    memory_bytes: int  # as the driver reports it
    vendor: str  # nvidia | amd | apple
    driver: str | None = None
    mig_profile: str | None = None  # 3g.40gb: the slice's compute sevenths and memory
    unified_memory: bool = False


class HostReading(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    cpu: str | None = None
    cores: int | None = None
    memory_bytes: int | None = None


def _bad(tool: str, line: int | str, why: str) -> InvalidScenarioError:
    return InvalidScenarioError(f"{tool}: line {line}: {why}", field=f"{tool}:{line}",
                                allowed=f"the output of {tool} in its documented format")


def _number(text: str, tool: str, line: int | str) -> float:
    try:
        value = float(text.strip())
    except ValueError:
        raise _bad(tool, line, f"{text.strip()!r} is not a number") from None
    if not value >= 0 or value == float("inf"):
        raise _bad(tool, line, f"{text.strip()!r} is not a size")
    return value


def parse_nvidia_query(text: str) -> list[GpuReading]:
    """``nvidia-smi --query-gpu=…`` CSV without header or units: one GPU a line."""
    gpus = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(NVIDIA_QUERY_FIELDS):
            raise _bad("nvidia-smi", n, f"expected {len(NVIDIA_QUERY_FIELDS)} fields "
                       f"({', '.join(NVIDIA_QUERY_FIELDS)}), got {len(cells)}")
        index, name, memory, driver, mig = cells
        gpus.append(GpuReading(index=index, name=name, memory_bytes=int(_number(memory, "nvidia-smi", n) * MiB),
                               vendor="nvidia", driver=driver, mig_profile="enabled" if mig == "Enabled" else None))
    return gpus


# nvidia-smi -L: "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-…)" and "  MIG 3g.40gb     Device  0: (UUID: MIG-…)"
_GPU_LINE = re.compile(r"^GPU (\d+): (.+?) \(UUID")
_MIG_LINE = re.compile(r"^\s+MIG (\d+)g\.(\d+)gb\s+Device\s+(\d+):")


def mig_slices(query: list[GpuReading], listing: str) -> list[GpuReading]:
    """The GPUs with their MIG slices in place of every GPU in MIG mode (``nvidia-smi -L``)."""
    slices: dict[str, list[GpuReading]] = {}
    current = None
    for n, line in enumerate(listing.splitlines(), 1):
        if m := _GPU_LINE.match(line):
            current = m.group(1)
        elif m := _MIG_LINE.match(line):
            if current is None:
                raise _bad("nvidia-smi -L", n, "a MIG device before any GPU")
            g, gb, dev = m.groups()
            parent = next((q for q in query if q.index == current), None)
            name = parent.name if parent else "NVIDIA GPU"
            slices.setdefault(current, []).append(GpuReading(
                index=f"{current}/MIG {g}g.{gb}gb/{dev}", name=name, memory_bytes=int(gb) * GB, vendor="nvidia",
                driver=parent.driver if parent else None, mig_profile=f"{g}g.{gb}gb"))
    out = []
    for gpu in query:
        out.extend(slices.get(gpu.index, [gpu]) if gpu.mig_profile else [gpu])
    return out


def _json(text: str, tool: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise _bad(tool, exc.lineno, f"not JSON: {exc.msg}") from None


def parse_rocm_smi(text: str) -> list[GpuReading]:
    """``rocm-smi --showproductname --showmeminfo vram --json``: {"card0": {"Card series": …,
    "VRAM Total Memory (B)": "…"}}."""
    data = _json(text, "rocm-smi")
    if not isinstance(data, dict):
        raise _bad("rocm-smi", 1, "expected an object of cards")
    gpus = []
    for card, fields in data.items():
        if not card.startswith("card"):
            continue  # "system" and other sections
        if not isinstance(fields, dict):
            raise _bad("rocm-smi", card, "expected an object")
        name = fields.get("Card Series") or fields.get("Card series") or fields.get("Card model")
        memory = fields.get("VRAM Total Memory (B)")
        if not isinstance(name, str) or memory is None:
            raise _bad("rocm-smi", card, "no 'Card series' or no 'VRAM Total Memory (B)'")
        gpus.append(GpuReading(index=card.removeprefix("card"), name=name,
                               memory_bytes=int(_number(str(memory), "rocm-smi", card)), vendor="amd"))
    return gpus


def parse_amd_smi(text: str) -> list[GpuReading]:
    """``amd-smi static --json``: a list (or {"gpu_data": [...]}) of {"gpu", "asic": {"market_name"},
    "vram": {"size": {"value", "unit"} | MB}}."""
    data = _json(text, "amd-smi")
    if isinstance(data, dict):
        data = data.get("gpu_data")
    if not isinstance(data, list):
        raise _bad("amd-smi", 1, "expected a list of GPUs")
    gpus = []
    for i, gpu in enumerate(data):
        try:
            name = gpu["asic"]["market_name"]
            size = gpu["vram"]["size"]
        except (KeyError, TypeError):
            raise _bad("amd-smi", f"[{i}]", "no asic.market_name or vram.size") from None
        value, unit = (size.get("value"), size.get("unit", "MB")) if isinstance(size, dict) else (size, "MB")
        scale = {"MB": MiB, "MiB": MiB, "GB": GiB, "B": 1}.get(str(unit))
        if scale is None or not isinstance(name, str):
            raise _bad("amd-smi", f"[{i}].vram.size", f"unit {unit!r} is not MB, GB or B")
        gpus.append(GpuReading(index=str(gpu.get("gpu", i)), name=name,
                               memory_bytes=int(_number(str(value), "amd-smi", f"[{i}]") * scale), vendor="amd"))
    return gpus


def parse_apple(sysctl: str, profiler: str) -> list[GpuReading]:
    """An Apple silicon GPU: its chip name and the unified memory it shares with the CPU."""
    lines = [line.strip() for line in sysctl.splitlines() if line.strip()]
    if len(lines) != 2:
        raise _bad("sysctl", 1, "expected two lines: machdep.cpu.brand_string and hw.memsize")
    chip, memory = lines[0], int(_number(lines[1], "sysctl", 2))
    data = _json(profiler, "system_profiler")
    displays = data.get("SPDisplaysDataType") if isinstance(data, dict) else None
    if not isinstance(displays, list):
        raise _bad("system_profiler", 1, "no SPDisplaysDataType list")
    apple = [d for d in displays if isinstance(d, dict) and "apple" in str(d.get("spdisplays_vendor", "")).lower()]
    if not apple or not chip.startswith("Apple"):
        return []  # an Intel Mac: its GPU is not an Apple silicon one
    cores = apple[0].get("sppci_cores")
    name = f"{chip} ({cores}-core GPU)" if cores else chip
    return [GpuReading(index="0", name=name, memory_bytes=memory, vendor="apple", unified_memory=True)]


def parse_meminfo(text: str) -> int:
    """MemTotal of ``/proc/meminfo`` in bytes (its kB are KiB)."""
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("MemTotal:"):
            parts = line.split()
            if len(parts) != 3 or parts[2] != "kB":
                raise _bad("/proc/meminfo", n, "expected 'MemTotal: <n> kB'")
            return int(_number(parts[1], "/proc/meminfo", n) * KiB)
    raise _bad("/proc/meminfo", 1, "no MemTotal line")


def parse_lscpu(text: str) -> tuple[str | None, int | None]:
    """The CPU model name and logical CPUs ``lscpu`` reports."""
    fields = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip(), value.strip())
    cpus = fields.get("CPU(s)")
    return fields.get("Model name"), int(cpus) if cpus and cpus.isdigit() else None


def memory_text(memory_bytes: int) -> str:
    return f"{memory_bytes / GiB:.1f} GiB"
