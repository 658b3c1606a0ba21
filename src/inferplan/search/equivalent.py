"""Builds of one model that run the same: the same engine instance in another weight format at the
same cost, with every figure the ranking shows within ``FIGURE_TOLERANCE`` (Qwen3-235B-A22B's
official 128×128-block FP8 build and NVIDIA's per-tensor FP8 build both run as FP8 E4M3; their
weight bytes differ by the block scales, a few millionths of the whole). A ranking shows such
builds as one row: the better-supported build (``support_key``), naming the others."""

from __future__ import annotations

from inferplan.catalog.models import ModelSpec

# figures that agree to within 0.1 % read the same: the table prints three significant digits
FIGURE_TOLERANCE = 1e-3
FIGURES = ("ttft_p50_s", "ttft_p95_s", "ttft_p99_s", "tpot_p95_s", "e2e_p95_s", "tokens_per_s_per_user")


def same_figures(a: dict[str, float], b: dict[str, float]) -> bool:
    """Every figure of ``FIGURES`` within ``FIGURE_TOLERANCE`` of the other's."""
    return all(abs(a[k] - b[k]) <= FIGURE_TOLERANCE * max(abs(a[k]), abs(b[k])) for k in FIGURES)


def support_key(spec: ModelSpec, quantization: str) -> tuple[bool, bool, int]:
    """Lower is better supported: a build the model's card lists (not one an engine's tools convert
    to), then one whose byte size the catalogue states (its memory rests on the build's own bytes,
    not on a count from the config), then the card's order (it lists the model's own builds first)."""
    builds = spec.builds
    listed = quantization in builds
    return (not listed, spec.checkpoint(quantization) is None, builds.index(quantization) if listed else len(builds))


def equivalence_note(quantizations: tuple[str, ...]) -> str:
    """What a row that stands for other builds says of them."""
    named = " and ".join(f"the {q} build" for q in quantizations)
    verb = "runs" if len(quantizations) == 1 else "run"
    return (f"{named} of the model {verb} this deployment the same: same cost, every figure within "
            f"{FIGURE_TOLERANCE:.1%}; one row stands for them, in the better-supported build")
