"""'What runs on my GPUs?' as people read it: one row of short texts per catalogue model on the GPUs
asked about (``performance/here.py``: whether it fits them, and one request's speed if it does; for one
they do not hold, the weight offload that fits them, the host RAM it needs, and with the host RAM stated
and holding it, one request's speed with it), with the engine each row is planned on and the command that
starts it (``deploy/command.py``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.deploy.command import launch_command
from inferplan.errors import InferplanError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.context_cache import context_slots
from inferplan.performance.here import ModelOnGpus, OffloadOnGpus, WhatRuns
from inferplan.report.numbers import whole_count_text
from inferplan.units import GiB, plural


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)


class HomelabRow(_Frozen):
    model: str
    quantization: str
    fits: bool
    verdict: str  # "runs", "needs 4 GPUs", "no layout holds it"
    context: str
    at_once: str  # requests of the row's context served at once (fit's "at once"): llama.cpp's --parallel slots
    ttft: str
    speed: str  # output tokens/s for one user (a model the GPUs do not hold: with the offload, when priced)
    offload: str  # a model the GPUs do not hold: the weight offload that fits them, and the host RAM it needs
    engine: str  # the engine the row is planned on, by name (llama.cpp)
    command: str  # the command that starts the row's deployment (with its offload), "—" where none runs


class HomelabView(_Frozen):
    summary: str
    rows: tuple[HomelabRow, ...]
    result: WhatRuns


def _verdict(m: ModelOnGpus) -> str:
    if m.fits:
        return "runs" if m.ttft_s is not None else "runs (no speed estimate for it here)"
    return "no layout of this GPU holds it" if m.gpus_needed is None else f"needs {plural(m.gpus_needed, 'GPU')}"


def _gib(memory_bytes: float) -> str:
    gib = memory_bytes / GiB
    return f"{gib:,.0f}" if gib == round(gib) else f"{gib:,.2f}"


def _offload(o: OffloadOnGpus | None) -> str:
    if o is None:
        return "—"
    needed = f"{o.host_memory_bytes_needed / GiB:,.1f}"
    needs = f"{o.flag}: needs {needed} GiB of host RAM"
    if o.host_memory_bytes is None:
        return f"{needs} (state the host RAM for its speed)"
    if not o.fits_host:
        return f"{needs}, more than the {_gib(o.host_memory_bytes)} GiB stated"
    held = f"{o.flag}: {needed} of the {_gib(o.host_memory_bytes)} GiB of host RAM"
    return f"{held}; {o.note}" if o.note else held


def _deployment(m: ModelOnGpus, r: WhatRuns, held: float | None, catalog: Catalog) -> Deployment | None:
    """The row's deployment as planned: on the GPUs asked about, with its weight offload where the GPUs do not
    hold it and the host RAM is not known to fall short (None: no way runs there), at the offload's context where
    it shortens the row's (``fit``'s suggestion of a vLLM ``--cpu-offload-gb`` may), as its speed is estimated. An
    engine with a context per slot (llama-server) is started with the slots the what-fits matrix counts for it
    (``held``: the most whose cache fits), so its command serves the requests the row says it does."""
    runs_offloaded = m.offload is not None and m.offload.fits_host is not False
    if not m.fits and not runs_offloaded:
        return None
    d = Deployment(**{"model": m.model, "gpu": r.accelerator, "gpus": r.gpus, "engine": m.engine,
                      "quantization": m.quantization, "max_model_len": m.max_model_len,
                      **({} if m.fits else m.offload.changes)})
    if held is None or held < 1 or context_slots(catalog, d, d.engine) is None:
        return d
    return d.model_copy(update={"max_num_seqs": int(held)})


def _command(d: Deployment | None, catalog: Catalog) -> str:
    """The launch command of the row's deployment ("—": no way runs there)."""
    if d is None:
        return "—"
    try:
        return launch_command(d, catalog).text
    except InferplanError as exc:
        return f"no command: {exc}"


def _at_once(held: float | None, d: Deployment | None, catalog: Catalog) -> str:
    """The requests the row serves at once: on an engine with a context per slot (llama-server) the slots its
    command opens (``context_slots``: its --parallel, the what-fits matrix's count); else the whole sequences of the row's context
    its KV cache holds together (18, where it holds 18.9 of them); "—" where the row does not run (its offload
    command opens slots, but without the host RAM stated nothing says the weights fit there)."""
    if held is None:
        return "—"
    slots = context_slots(catalog, d, d.engine) if d is not None else None
    return f"{slots:,}" if slots is not None else whole_count_text(held)


def _row(m: ModelOnGpus, r: WhatRuns, catalog: Catalog) -> HomelabRow:
    dash = "—"
    priced = m.offload if m.offload is not None and m.offload.output_tokens_per_s_per_user is not None else m
    held, ttft_s, speed = priced.concurrency, priced.ttft_s, priced.output_tokens_per_s_per_user
    d = _deployment(m, r, held, catalog)
    return HomelabRow(
        model=m.model, quantization=m.quantization, fits=m.fits, verdict=_verdict(m),
        context=_context(d.max_model_len if d is not None else m.max_model_len),
        at_once=_at_once(held, d, catalog),
        ttft=(f"{ttft_s * 1e3:,.0f} ms" if ttft_s < 1 else f"{ttft_s:,.2f} s") if ttft_s is not None else dash,
        speed=(f"{speed:,.1f} tok/s" if speed < 10 else f"{speed:,.0f} tok/s") if speed is not None else dash,
        offload=_offload(m.offload), engine=catalog.engine(m.engine).name, command=_command(d, catalog))


def _context(max_model_len: int | None) -> str:
    return f"{max_model_len:,} tokens" if max_model_len else "—"


def _left_out(left_out: tuple[str, ...]) -> str:
    if not left_out:
        return ""
    n = len(left_out)
    return (f" Not listed: {n} more catalogue model{'s' if n > 1 else ''} the default list leaves out "
            f"({', '.join(left_out)}); all models (all_models) lists them.")


def _offloads(r: WhatRuns) -> str:
    offloaded = [m for m in r.models if m.offload is not None]
    if not offloaded:
        return ""
    if r.host_memory_gb is None:
        return (f" {len(offloaded)} more fit with weights in host RAM (slower decode), each at the least setting that "
                "fits the GPUs: state the host RAM for their speed.")
    runs = sum(1 for m in offloaded if m.offload.output_tokens_per_s_per_user is not None)
    return (f" {runs} more run with weights in the {_gib(r.host_memory_gb * GiB)} GiB of host RAM (slower decode), each at the "
            "least setting that fits the GPUs; their requests at once, TTFT and tokens/s are with it.")


def _engines(r: WhatRuns, catalog: Catalog) -> str:
    if r.engine is not None:
        return f" with {catalog.engine(r.engine).name}"
    engines = _names([catalog.engine(e).name for e in r.engines])
    return (f", each model on its best way of {engines}: a build the GPUs hold at the most bits per weight, then "
            "the fastest; else the fastest weight offload the host RAM holds; else the fewest GPUs")


def _names(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _layouts(r: WhatRuns, catalog: Catalog) -> str | None:
    """The layouts the rows that run are planned in (their layout notes), each with the engines whose rows
    run it where the rows do not all share one (None: no row states one)."""
    engines: dict[str, list[str]] = {}
    for m in r.models:
        if m.fits and m.ttft_s is not None and m.note:
            names = engines.setdefault(m.note, [])
            if (name := catalog.engine(m.engine).name) not in names:
                names.append(name)
    if len(engines) <= 1:
        return next(iter(engines), None)
    return "; ".join(f"{note} on {_names(names)}" for note, names in engines.items())


def homelab_view(r: WhatRuns, catalog: Catalog | None = None) -> HomelabView:
    catalog = catalog or load_catalog()
    runs = sum(1 for m in r.models if m.fits)
    layout = _layouts(r, catalog)
    summary = (f"{runs} of {len(r.models)} catalogue models run on {r.gpus} × {r.accelerator}{_engines(r, catalog)}. "
               f"Requests at once: how many whole requests of the row's context its KV cache holds together (on llama.cpp, the "
               f"--parallel slots whose cache fits, which its command opens); TTFT and tokens/s: "
               f"one request of {r.input_len:,} input + {r.output_len:,} output tokens"
               + (f"; {layout}" if layout else "") + "." + _offloads(r) + _left_out(r.left_out))
    return HomelabView(summary=summary, rows=tuple(_row(m, r, catalog) for m in r.models), result=r)
