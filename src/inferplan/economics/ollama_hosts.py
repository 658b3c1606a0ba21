"""The Ollama servers a loadout's hosts run: one ``ollama serve`` per operating-system host, on the GPUs
Ollama loads a tag's build on at the slots the server is started with (``capacity.py`` packs them)."""

from __future__ import annotations

from inferplan.catalog.loader import Catalog
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.hardware import resolve_hardware, runs_named_build
from inferplan.memory.layout import LAYOUT_FIELDS, os_host_gpus
from inferplan.memory.ollama_batch import on_ollama_gpu
from inferplan.memory.slots import SLOT_LIMIT, most_slots


def ollama_servers(catalog: Catalog, base: Deployment, gpus: int, system: str) -> tuple[tuple[Deployment, ...], int] | None:
    """The instances Ollama may run of an Ollama tag's build on each host of a loadout of ``gpus`` GPUs, as fit plans
    them (``memory.ollama_batch.on_ollama_gpu``), and the GPUs of that host: one ``ollama serve`` per operating-system
    host (a rack's compute tray, ``memory.layout.os_host_gpus``), on the GPUs Ollama loads the tag on at the slots
    the server is started with (``_started``). None where ``base`` runs no tag's build, or a host has one GPU: the
    cells are packed as for any engine. Refused naming ``platform.gpus`` where the GPUs are not whole hosts."""
    stated = {k: getattr(base, k) for k in base.model_fields_set - set(LAYOUT_FIELDS) - {"gpus"}}
    d = Deployment(**stated, gpus=gpus)
    if runs_named_build(catalog, d) is None:
        return None
    host = min(gpus, os_host_gpus(catalog, resolve_hardware(catalog, d)))
    if host < 2:
        return None
    if gpus % host:
        raise InvalidScenarioError(f"{base.model} is an Ollama tag: one `ollama serve` runs on each host of {host} GPUs, "
                                   f"and {gpus} GPUs are not whole hosts", field="platform.gpus",
                                   allowed=f"a multiple of {host} GPUs, or a stated `cell` to plan copies of it")
    named = catalog.systems.records.get(system)
    if named is not None and named.accelerator_count == host:  # a system named alone, as fit is given it
        d = Deployment(**{k: v for k, v in stated.items() if k != "gpu"}, system=system)
    else:
        d = d.model_copy(update={"gpus": host})
    return _started(catalog, d), host


def _started(catalog: Catalog, d: Deployment) -> tuple[Deployment, ...]:
    """``d`` started with the most slots that fit (as ``cell_capacity`` starts a cell) on the GPUs Ollama loads it on
    at those slots: Ollama predicts at the num_parallel it is started with (OLLAMA_NUM_PARALLEL; ``server/sched.go``
    predicts at num_ctx × num_parallel before it places the model), so a tag one GPU holds at one slot is spread
    over every GPU where the most slots one GPU holds pass the share. Then also the server on one GPU at the most
    slots that keep it there (the fewer slots it runs, the other launch)."""
    one = on_ollama_gpu(d, catalog)
    if d.max_num_seqs is not None or not one.gpus_chosen_by or not (slots := most_slots(one, catalog, SLOT_LIMIT)):
        return (one,)
    at = on_ollama_gpu(d.model_copy(update={"max_num_seqs": slots}), catalog)
    if at.gpus == one.gpus:
        return (at,)
    spread = most_slots(at.model_copy(update={"max_num_seqs": None}), catalog, SLOT_LIMIT) or slots
    servers = [on_ollama_gpu(d.model_copy(update={"max_num_seqs": spread}), catalog)]
    lo, hi = 0, slots - 1  # the most slots at which Ollama still loads the tag on one GPU
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if on_ollama_gpu(d.model_copy(update={"max_num_seqs": mid}), catalog).gpus == 1 else (lo, mid - 1)
    if lo:
        servers.append(on_ollama_gpu(d.model_copy(update={"max_num_seqs": lo}), catalog))
    return tuple(servers)
