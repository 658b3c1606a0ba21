"""The tables of docs/speed.md and docs/offload.md that come from the shipped data, rendered afresh.

Both documents hold blocks between ``<!-- generated: NAME -->`` and ``<!-- end generated -->``; each
is rendered here from the catalogue — the per-family constants from ``calibration_speed.yaml``, the
validation medians and the build-year table from ``validate_speed`` (speed.md), the medians of the
points with weights in host RAM (offload.md) — so neither document quotes a figure by hand.
``python -m inferplan.validation.docs_tables --write`` rewrites the blocks; without ``--write`` it
exits 1 and names the blocks that differ. A test keeps each document equal to a fresh render.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.validation.calibrate_speed import CONSTANT_IDS, FAMILIES, MIN_POINTS, MIN_RESPONDING
from inferplan.validation.speed import KINDS, OFFLOAD, SpeedValidation, validate_speed

DOCS_DIR = Path(__file__).resolve().parents[3] / "docs"
DOC = DOCS_DIR / "speed.md"
OFFLOAD_DOC = DOCS_DIR / "offload.md"
# which document holds which generated blocks
BLOCKS_BY_DOC = {DOC: ("families", "validation", "build-years"), OFFLOAD_DOC: ("offload",)}
BLOCK = re.compile(r"(<!-- generated: (?P<name>[a-z-]+) -->\n)(?P<body>.*?)(<!-- end generated -->)", re.DOTALL)

# constant name -> (column heading, scale to the unit shown, format)
COLUMNS = {
    "bandwidth_efficiency": ("η_bw", 1.0, "{:.2f}"),
    "compute_efficiency": ("η_compute", 1.0, "{:.2f}"),
    "step_overhead_s": ("step overhead (ms)", 1e3, "{:.2f}"),
    "layer_overhead_s": ("per-layer overhead (µs)", 1e6, "{:.0f}"),
    "moe_layer_overhead_s": ("per-MoE-layer extra (µs)", 1e6, "{:.0f}"),
    "seq_overhead_s": ("per-sequence overhead (µs)", 1e6, "{:.1f}"),
    "unpack_flops_per_weight": ("K-quant unpack (FLOP/weight)", 1.0, "{:.1f}"),
    "request_overhead_s": ("request overhead (ms)", 1e3, "{:.1f}"),
}
KIND_LABELS = {
    "decode": "single-stream decode (concurrency 1)",
    "decode-concurrent": "per-user decode at concurrency 2–100",
    "prefill": "prefill (prompt tokens/s, TTFT)",
    "throughput": "serving throughput",
    "profile": "measured profile points",
    "offload-decode": "decode, weights in host RAM (not in all kinds)",
    "offload-prefill": "prefill, weights in host RAM (not in all kinds)",
}


def markdown_row(cells: list[str]) -> str:
    """One row of a Markdown table; a ``|`` inside a cell is escaped."""
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def families_table(catalog: Catalog) -> str:
    """Every family's shipped constants; * marks a pooled value the family's points do not pin down."""
    head = ["family", "fit points", *(c[0] for c in COLUMNS.values()), "mean abs log error"]
    lines = [markdown_row(head), markdown_row(["---"] * len(head))]
    for family in sorted(FAMILIES):
        records = {name: catalog.calibration.records[ident.format(family)] for name, ident in CONSTANT_IDS.items()}
        first = next(iter(records.values()))
        pooled = "pooled fit over all" in first.method
        count = "pooled" if pooled else re.search(r"(\d+) fit points", first.method).group(1)
        cells = [family, count]
        for name, (_, scale, fmt) in COLUMNS.items():
            r = records[name]
            kept = r.method.startswith("pooled value kept")
            cells.append(fmt.format(r.value * scale) + ("*" if kept else ""))
        err = re.search(r"mean \|log error\| ([0-9.]+)", first.error or "")
        cells.append(err.group(1) if err else "—")
        lines.append(markdown_row(cells))
    lines.append("")
    lines.append(f"`pooled`: fewer than {MIN_POINTS} fit points, so the family takes the pooled fit over all points;")
    lines.append(f"`*`: fewer than {MIN_RESPONDING} of the family's points respond to that constant, so it keeps the pooled value.")
    return "\n".join(lines) + "\n"


def _counts(v: SpeedValidation, kind: str, split: str) -> tuple[int, int]:
    errors = [abs(c.error) for c in v.checks if c.scored and c.error is not None
              and (c.kind == kind or kind == "all" and not c.kind.startswith(OFFLOAD))
              and (split == "all" or c.split == split)]
    return len(errors), sum(e > 0.30 for e in errors)


def _kinds_table(v: SpeedValidation, kinds: tuple[str, ...]) -> list[str]:
    """Median |error| of each kind by split, with the point counts and how many miss by more than 30 %."""
    def pct(key: str) -> str:
        return f"{v.medians[key]:.2%}".replace("%", " %") if key in v.medians else "—"

    head = ["kind", "scored points", "median abs error, fit", "held out", "all", "beyond 30 % (held out)"]
    lines = [markdown_row(head), markdown_row(["---"] * len(head))]
    for kind in kinds:
        n, beyond = _counts(v, kind, "all")
        _, beyond_held = _counts(v, kind, "holdout")
        lines.append(markdown_row([KIND_LABELS.get(kind, "all kinds"), str(n), pct(f"{kind}/fit"), pct(f"{kind}/holdout"),
                           pct(f"{kind}/all"), f"{beyond} ({beyond_held})"]))
    return lines


def offload_table(v: SpeedValidation) -> str:
    """The validation rows of the points with weights in host RAM."""
    return "\n".join(_kinds_table(v, tuple(k for k in KINDS if k.startswith(OFFLOAD)))) + "\n"


def validation_table(v: SpeedValidation) -> str:
    """Median |error| by kind and split, with the point counts and how many miss by more than 30 %."""
    lines = _kinds_table(v, (*KINDS, "all"))
    unplanned = sum(c.error is None for c in v.checks)
    not_scored = sum(not c.scored and c.error is not None for c in v.checks)
    lines.append("")
    lines.append(f"{len(v.checks)} checks: {len(v.checks) - unplanned - not_scored} scored, {unplanned} that cannot "
                 "be planned as described (each says why),")
    lines.append(f"{not_scored} measured with CUDA graphs off (shown with their error, not scored).")
    return "\n".join(lines) + "\n"


def build_year_table(v: SpeedValidation) -> str:
    head = ["engine builds of", "decode points", "median abs error", "worse than 30 %"]
    lines = [markdown_row(head), markdown_row(["---"] * len(head))]
    for y in v.decode_by_build_year:
        lines.append(markdown_row([y.year, str(y.points), f"{y.median_abs_error:.1%}".replace("%", " %"),
                           str(y.beyond_30_percent)]))
    return "\n".join(lines) + "\n"


def render_tables(catalog: Catalog | None = None) -> dict[str, str]:
    """Every generated block of docs/speed.md and docs/offload.md, by name (``BLOCKS_BY_DOC`` says where each lives)."""
    catalog = catalog or load_catalog()
    v = validate_speed(catalog)
    renderers: dict[str, Callable[[], str]] = {
        "families": lambda: families_table(catalog),
        "validation": lambda: validation_table(v),
        "build-years": lambda: build_year_table(v),
        "offload": lambda: offload_table(v),
    }
    return {name: render() for name, render in renderers.items()}


def blocks(text: str) -> dict[str, str]:
    """The generated blocks a document holds, by name."""
    return {m.group("name"): m.group("body") for m in BLOCK.finditer(text)}


def fill(text: str, tables: dict[str, str]) -> str:
    """``text`` with every generated block replaced by its fresh render; an unknown block name is an error."""
    def replace(m: re.Match[str]) -> str:
        name = m.group("name")
        if name not in tables:
            raise KeyError(f"no renderer for the generated block {name!r} (known: {', '.join(tables)})")
        return m.group(1) + tables[name] + m.group(4)
    return BLOCK.sub(replace, text)


def write_or_check(doc: Path, render: Callable[[], dict[str, str]], args: list[str]) -> int:
    """Rewrite ``doc``'s generated blocks (``--write``), or exit 1 naming the blocks that differ."""
    text = doc.read_text()
    fresh = fill(text, render())
    if "--write" in args:
        doc.write_text(fresh)
        print(f"wrote {len(blocks(fresh))} generated blocks in {doc}")
        return 0
    stale = [name for name, body in blocks(text).items() if blocks(fresh)[name] != body]
    print("stale generated blocks: " + ", ".join(stale) if stale else "every generated block is current")
    return 1 if stale else 0


def main(args: list[str] | None = None) -> int:  # pragma: no cover - a maintenance script
    tables = render_tables()
    argv = sys.argv[1:] if args is None else args
    return max(write_or_check(doc, lambda names=names: {n: tables[n] for n in names}, argv)
               for doc, names in BLOCKS_BY_DOC.items())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
