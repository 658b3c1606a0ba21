"""The tables of docs/memory.md that come from the shipped data, rendered afresh.

Like docs/speed.md (``docs_tables.py``), docs/memory.md holds blocks between
``<!-- generated: NAME -->`` and ``<!-- end generated -->``: the engine memory rules of
``engine_memory_rules.yaml`` (what each release line counts, with its sources), the first release
that loads each architecture and format (``engine_support.yaml``) and the field-set
scores of ``validate_memory`` by release, by rule and per record.
``python -m inferplan.validation.docs_memory --write`` rewrites them; without ``--write`` it exits 1
and names the blocks that differ. A test keeps the document equal to a fresh render.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.catalog.memory_rules import MemoryRule, engine_rules, release_key
from inferplan.validation.docs_tables import markdown_row, write_or_check
from inferplan.validation.memory import MemoryValidation, SplitSummary, validate_memory
from inferplan.units import GB, GiB

DOC = Path(__file__).resolve().parents[3] / "docs" / "memory.md"

PARTS = {"weights": "weights", "activation_peak": "activation peak", "non_torch": "non-torch memory",
         "cuda_context": "CUDA context", "other_processes": "other processes", "cuda_graphs": "CUDA graphs"}
GRAPHS = {"none": "none", "after_kv": "captured after the KV cache is sized (outside the fraction)",
          "estimated": "estimated and counted"}
BUDGETS = {"of_total": "total × fraction", "of_free_after_weights": "free after the counted parts × fraction",
           "no_fraction": "no fraction: the device"}


def _profile(rule: MemoryRule) -> str:
    a = rule.activation
    if a.model == "outside_fraction":
        return "outside the fraction"
    if a.model == "llamacpp_logits":
        return "one n_ubatch of logits"
    if a.model == "generic":
        return "workspace per batched token"
    if a.model == "mlx_in_flight":
        w = rule.prefill_working_set
        return (f"a prompt chunk's activations held by up to {w.max_active_tasks} in-flight command buffers "
                f"and the open one")
    batch = "max_num_batched_tokens (engines.yaml default) tokens" if a.profile_tokens == "engine_default" else \
        f"max(max_model_len, {a.profile_tokens_floor}) tokens"
    if a.chunked_prefill_above_tokens:
        batch += f" ({a.chunked_prefill_tokens} when max_model_len > {a.chunked_prefill_above_tokens:,}: chunked prefill)"
    seqs = f"{rule.max_num_seqs_default}" if rule.max_num_seqs_default else "max_num_seqs"
    if a.model == "forward_or_sampler":
        return f"the larger of a forward of {batch} (its MLP peak) and a sampler pass over {seqs} rows"
    return f"forward of {batch} + sampler over {seqs} rows"


def rules_table(catalog: Catalog) -> str:
    """Every engine memory rule: releases, what counts against the fraction, the profile, CUDA graphs,
    blocks and sources (linked)."""
    head = ["rule", "releases", "budget", "counts against it", "activation profile", "CUDA graphs", "blocks",
            "sources"]
    lines = [markdown_row(head), markdown_row(["---"] * len(head))]
    for engine in sorted({r.engine for r in catalog.memory_rules}):
        for r in engine_rules(catalog.memory_rules, engine):
            releases = r.releases + (f" {r.variant}" if r.variant else "") + (" (default)" if r.default else "")
            sources = ", ".join(f"[{s}]({catalog.sources[s].url})" for s in r.sources)
            lines.append(markdown_row([f"`{r.id}`", releases, BUDGETS[r.budget], ", ".join(PARTS[p] for p in r.counted),
                               _profile(r), GRAPHS[r.cuda_graphs], r.block_rounding.replace("_", " "), sources]))
    lines.append("")
    lines.append("`(default)`: the rule planned with when no `--engine-version` is given.")
    return "\n".join(lines) + "\n"


def _pct(x: float | None, digits: int = 1) -> str:
    return "—" if x is None else f"{x:.{digits}%}".replace("%", " %")


def _summary_rows(summaries: list[SplitSummary]) -> list[str]:
    return [markdown_row([s.label, str(s.points), _pct(s.median_abs_kv_error), _pct(s.worst_abs_kv_error),
                  _pct(s.median_abs_weights_error, 2), _pct(s.fit_agreement, 0)]) for s in summaries]


def field_table(v: MemoryValidation, by: str) -> str:
    """The field set's scores by engine release or by rule, then held out and all."""
    head = ["engine release" if by == "release" else "memory rule", "records", "KV median |err|", "KV worst |err|",
            "weights median |err|", "fit agree"]
    groups = list(v.by_engine_version if by == "release" else v.by_rule)
    return "\n".join([markdown_row(head), markdown_row(["---"] * len(head)), *_summary_rows([*groups, v.holdout, v.field])]) + "\n"


def records_table(v: MemoryValidation) -> str:
    """Each field record: split, the rule it was planned with (and why that rule), and its scores."""
    def gib(x: float | None) -> str:
        return "—" if x is None else f"{x / GiB:.2f}"

    def yes(x: bool | None) -> str:
        return "—" if x is None else ("yes" if x else "no")

    head = ["record", "split", "rule (chosen by)", "weights GiB meas./pred.", "KV GiB meas./pred.", "KV error",
            "fits meas./pred."]
    lines = [markdown_row(head), markdown_row(["---"] * len(head))]
    for c in v.checks:
        if c.split == "calibration":
            continue
        err = "—" if c.kv_error is None else f"{c.kv_error:+.1%}".replace("%", " %").replace("-", "−")
        fits = f"{yes(c.measured_fits)}/{yes(c.predicted_fits)}"
        if c.predicted_fits is not None and c.predicted_fits != c.measured_fits:
            fits = f"{yes(c.measured_fits)}/**{yes(c.predicted_fits)}**"
        lines.append(markdown_row([c.id, c.split, f"{c.memory_rule} ({c.rule_basis})",
                           f"{gib(c.measured_weights_bytes)} / {gib(c.predicted_weights_bytes)}",
                           f"{gib(c.measured_kv_bytes)} / {gib(c.predicted_kv_bytes)}", err, fits]))
    return "\n".join(lines) + "\n"


def peaks_table(v: MemoryValidation) -> str:
    """Each record that printed its allocator peak (mlx-lm "Peak memory"): the peak against the planned
    weights + KV cache for the run's context + activations."""
    head = ["record", "split", "peak GB meas./pred.", "error"]
    lines = [markdown_row(head), markdown_row(["---"] * len(head))]
    for c in v.checks:
        if c.measured_peak_bytes is None:
            continue
        pred = "—" if c.predicted_peak_bytes is None else f"{c.predicted_peak_bytes / GB:.2f}"
        err = "—" if c.peak_error is None else f"{c.peak_error:+.1%}".replace("%", " %").replace("-", "−")
        lines.append(markdown_row([c.id, c.split, f"{c.measured_peak_bytes / GB:.3f} / {pred}", err]))
    return "\n".join(lines) + "\n"


def support_table(catalog: Catalog) -> str:
    """engine_support.yaml: the first release of each engine that loads an architecture or format."""
    lines = ["| engine | loads | from release | sources |", "|---|---|---|---|"]
    for f in sorted(catalog.engine_support, key=lambda f: (f.engine, f.quantization or "", release_key(f.first_release))):
        name = catalog.engines.records[f.engine].name
        lines.append(markdown_row([name, f"`{f.subject()}`", f.first_release,
                                   ", ".join(f"[{s}]({catalog.sources[s].url})" for s in f.sources)]))
    return "\n".join(lines) + "\n"


def render_memory_tables(catalog: Catalog | None = None) -> dict[str, str]:
    """Every generated block of docs/memory.md, by name."""
    catalog = catalog or load_catalog()
    v = validate_memory(catalog)
    renderers: dict[str, Callable[[], str]] = {
        "memory-rules": lambda: rules_table(catalog),
        "engine-support": lambda: support_table(catalog),
        "memory-field-releases": lambda: field_table(v, "release"),
        "memory-field-rules": lambda: field_table(v, "rule"),
        "memory-field-records": lambda: records_table(v),
        "memory-field-peaks": lambda: peaks_table(v),
    }
    return {name: render() for name, render in renderers.items()}


def main(args: list[str] | None = None) -> int:  # pragma: no cover - a maintenance script
    return write_or_check(DOC, render_memory_tables, sys.argv[1:] if args is None else args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
