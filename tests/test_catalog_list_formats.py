"""`inferplan models` names each checkpoint format once, with the count where builds share one."""

from __future__ import annotations

from rich.console import Console

from inferplan.catalog.loader import load_catalog
from inferplan.shells.render_catalog import catalog_table

CATALOG = load_catalog()


def _row(model_id: str) -> str:
    console = Console(width=250, record=True)
    console.print(catalog_table("models", [CATALOG.models.records[model_id]], width=250))
    return console.export_text()


def test_builds_that_share_a_format_are_counted_not_repeated():
    text = _row("qwen3-30b-a3b-2507")  # Instruct and Thinking, each in bf16 and fp8-block; two GGUF files
    assert "bf16, fp8-block, gguf-q4_k_m, gguf-q8_0 (6 checkpoints)" in text and "bf16, fp8-block, bf16" not in text


def test_distinct_formats_are_listed_without_a_count():
    text = _row("llama-3.1-405b")
    assert "bf16, fbgemm-fp8, fp8" in text and "checkpoints)" not in text


def test_the_formats_stay_in_a_narrower_terminal():
    console = Console(width=120, record=True)
    console.print(catalog_table("models", [CATALOG.models.records["llama-3.1-405b"]], width=120))
    assert "bf16, fbgemm-fp8, fp8" in console.export_text()
