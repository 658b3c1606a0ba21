"""Rich rendering of the catalogue for the CLI: the list of one kind of entry, one entry with its sourced
figures, and a model imported from a Hugging Face config."""

from __future__ import annotations

from pydantic import BaseModel
from rich.console import Console, RenderableType
from rich.markup import escape
from rich.table import Table

from inferplan.catalog.provenance import Sourced, iter_sourced
from inferplan.report.numbers import si_text
from inferplan.shells.render import Col, gb, layout, print_assumptions
from inferplan.units import BILLION, GB, MiB, fmt_billions, fmt_kib


def _q(q: Sourced | None, scale: float = 1.0, fmt: str = "{:,.0f}") -> str:
    return "—" if q is None else fmt.format(q.value / scale)


def _memory(a) -> str:
    """An accelerator's memory; a part sold in several sizes, the sizes it is sold in ("36–128 GB", the id
    planning the largest: ``catalog/memory_config.py``)."""
    if not a.memory_configurations:
        return gb(a.memory_bytes.value)
    sizes = [c.memory_bytes.value for c in a.memory_configurations]
    return f"{sizes[0] / GB:,.0f}–{sizes[-1] / GB:,.0f} GB"


def sizes_note(entries: list[BaseModel]) -> str | None:
    """How to name one size of a listed part sold in several (None: none listed)."""
    sized = next((a for a in entries if getattr(a, "memory_configurations", ())), None)
    if sized is None:
        return None
    size = sized.memory_configurations[0].memory_bytes.value / GB
    return (f"memory as a range: sold in several sizes, the id alone planning the largest; name one as "
            f"'{sized.aliases[0] if sized.aliases else sized.id} {size:g}GB' or {sized.id}-{size:g}gb")


def catalog_table(kind: str, entries: list[BaseModel], width: int = 200) -> RenderableType:
    title = f"{kind} ({len(entries)})"
    if kind.startswith("accel"):
        cols = [Col("id", key=True), Col("name", False), Col("memory"), Col("bandwidth"), Col("bf16 TFLOPS", False),
                Col("native", False), Col("status", False)]
        rows = [[a.id, a.name, _memory(a), _q(a.memory_bandwidth_bytes_per_s, GB, "{:,.0f} GB/s"),
                 _q(a.peak_flop_per_s.get("bf16"), 1e12), ",".join(a.native_formats), a.status.value] for a in entries]
    elif kind.startswith("system"):
        cols = [Col("id", key=True), Col("name", False), Col("GPUs"), Col("memory", False), Col("power", False),
                Col("price USD (low–high)"), Col("status", False)]
        rows = []
        for s in entries:
            price = "—"
            if s.price and s.price.usd_low:
                high = s.price.usd_high.value if s.price.usd_high else s.price.usd_low.value
                price = f"${s.price.usd_low.value:,.0f}–{high:,.0f}" + (" card + host PC" if s.price.host else "")
            rows.append([s.id, s.name, f"{s.accelerator_count}× {s.accelerator}", gb(s.memory_bytes.value if s.memory_bytes else None),
                         _q(s.power_w, 1e3, "{:,.1f} kW"), price, s.status.value])
    elif kind.startswith("model"):
        cols = [Col("id", key=True), Col("name", False), Col("status", False), Col("params (total/active)"),
                Col("context", False), Col("formats"), Col("config", False)]
        rows = []
        for m in entries:
            params = _q(m.total_params, BILLION, "{:,.1f}B")
            if m.active_params:
                params += " / " + _q(m.active_params, BILLION, "{:,.1f}B")
            rows.append([m.id, m.name, m.status, params, _q(m.context_tokens), _formats(m.checkpoints),
                         "yes" if m.config else (f"proxy:{m.kv_proxy}" if m.kv_proxy else "no")])
    else:
        cols = [Col("id", key=True), Col("summary")]
        rows = [[e.id, str(getattr(e, "name", None) or getattr(e, "title", None) or getattr(e, "label", None)
                           or getattr(e, "method", ""))] for e in entries]
    return layout(title, cols, rows, width)


def _formats(checkpoints) -> str:
    """A model's checkpoint formats, each once, and how many checkpoints there are when some share one
    (Qwen3 2507: an Instruct and a Thinking build of each)."""
    formats = list(dict.fromkeys(c.quantization for c in checkpoints))
    more = f" ({len(checkpoints)} checkpoints)" if len(checkpoints) > len(formats) else ""
    return ", ".join(formats) + more


def print_entry(console: Console, kind: str, entry: BaseModel) -> None:
    console.print(f"[bold]{kind}[/]: {entry.id}")
    for key, value in entry.model_dump(mode="json", exclude_none=True).items():
        if not isinstance(value, (dict, list)):
            console.print(f"  {key}: {value}")
    table = Table("field", "value (SI)", "kind", "source")
    for path, q in iter_sourced(entry):
        table.add_row(path, si_text(q.value), q.kind.value, q.source)
    if table.row_count:
        console.print(table)


def print_import(console: Console, s, explain: bool = False) -> None:
    params = fmt_billions(s.total_params, ",.1f") + (f" ({fmt_billions(s.active_params, ',.1f')} active per token)" if s.experts else "")
    context = f"{s.context_tokens:,} tokens" if s.context_tokens else "not stated"
    console.print(f"[bold]{escape(s.name)}[/]: {escape(s.hf_architecture)} ({escape(s.model_type)}), {params} parameters", highlight=False)
    console.print(f"  context: {context}; KV cache: {fmt_kib(s.kv_cache_bytes_per_token_bf16)} per token at 16 bits"
                  + (f", plus {s.state_bytes_per_sequence_bf16 / MiB:,.1f} MiB of state per sequence" if s.state_bytes_per_sequence_bf16 else ""))
    checkpoint = gb(s.checkpoint_bytes) + (f" ({escape(s.checkpoint_source)})" if s.checkpoint_source else "") if s.checkpoint_bytes else "no weights found beside the config"
    console.print(f"  checkpoint: {checkpoint}; weights {escape(s.quantization or 'not quantized')}", highlight=False)
    console.print(f"  layers: {s.num_layers} ({', '.join(f'{n} {k}' for k, n in s.layer_kinds.items())}); "
                  f"{s.num_attention_heads} attention / {s.num_kv_heads} KV heads" + (", MLA" if s.mla else "")
                  + (f"; {s.experts} experts, {s.experts_per_token} per token" if s.experts else ""), highlight=False)
    console.print(f"  files in: {escape(s.path)}", highlight=False)
    if explain:
        print_assumptions(console, s.assumptions)
    elif s.assumptions:
        console.print(f"[dim]assumed: {len(s.assumptions)} things (--explain lists them)[/]")
