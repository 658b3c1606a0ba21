"""'What runs on my GPUs?' as people read it: one row of short texts per catalogue model on the GPUs
asked about (``performance/here.py``: whether it fits them, and one request's speed if it does)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from inferplan.performance.here import ModelOnGpus, WhatRuns


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)


class HomelabRow(_Frozen):
    model: str
    quantization: str
    fits: bool
    verdict: str  # "runs", "needs 4 GPUs", "no layout holds it"
    context: str
    at_once: str  # sequences of the row's context the KV cache holds at once (fit's "at once")
    ttft: str
    speed: str  # output tokens/s for one user


class HomelabView(_Frozen):
    summary: str
    rows: tuple[HomelabRow, ...]
    result: WhatRuns


def _verdict(m: ModelOnGpus) -> str:
    if m.fits:
        return "runs" if m.ttft_s is not None else "runs (no speed estimate for it here)"
    return "no layout of this GPU holds it" if m.gpus_needed is None else f"needs {m.gpus_needed:,} GPUs"


def _row(m: ModelOnGpus) -> HomelabRow:
    dash = "—"
    return HomelabRow(
        model=m.model, quantization=m.quantization, fits=m.fits, verdict=_verdict(m),
        context=f"{m.max_model_len:,} tokens" if m.max_model_len else dash,
        at_once=f"{m.concurrency:,.1f}" if m.concurrency is not None else dash,
        ttft=(f"{m.ttft_s * 1e3:,.0f} ms" if m.ttft_s < 1 else f"{m.ttft_s:,.2f} s") if m.ttft_s is not None else dash,
        speed=f"{m.output_tokens_per_s_per_user:,.0f} tok/s" if m.output_tokens_per_s_per_user is not None else dash)


def _left_out(left_out: tuple[str, ...]) -> str:
    if not left_out:
        return ""
    n = len(left_out)
    return (f" Not listed: {n} more catalogue model{'s' if n > 1 else ''} the default list leaves out "
            f"({', '.join(left_out)}); all models (all_models) lists them.")


def homelab_view(r: WhatRuns) -> HomelabView:
    runs = sum(1 for m in r.models if m.fits)
    layout = next((m.note for m in r.models if m.fits and m.ttft_s is not None and m.note), None)
    summary = (f"{runs} of {len(r.models)} catalogue models run on {r.gpus} × {r.accelerator} with {r.engine}. "
               f"Requests at once: how many of the row's context its KV cache holds together; TTFT and tokens/s: "
               f"one request of {r.input_len:,} input + {r.output_len:,} output tokens"
               + (f"; {layout}" if layout else "") + "." + _left_out(r.left_out))
    return HomelabView(summary=summary, rows=tuple(_row(m) for m in r.models), result=r)
