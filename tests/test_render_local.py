"""`inferplan detect`'s speed tables name the request lengths the library estimates them for."""

from __future__ import annotations

from types import SimpleNamespace

from rich.console import Console

from inferplan.performance import here
from inferplan.shells import render_local


def test_detect_speed_titles_state_the_librarys_request_lengths(monkeypatch):
    monkeypatch.setattr(here, "SPEED_INPUT_TOKENS", 2048)
    monkeypatch.setattr(here, "SPEED_OUTPUT_TOKENS", 128)
    speed = SimpleNamespace(model="m", quantization="q", ttft_s=0.1, output_tokens_per_s_per_user=10.0, source="s")
    offload = SimpleNamespace(model="m", quantization="q", offload=SimpleNamespace(
        ttft_s=None, output_tokens_per_s_per_user=None, flag="-ngl 10", host_memory_bytes_needed=2**30))
    console = Console(record=True, width=200)
    render_local.print_speeds(console, [speed])
    render_local.print_offloads(console, [offload], 2**34)
    text = " ".join(console.export_text().split())  # a title wraps to its table's width
    assert text.count("(2048 prompt / 128 output tokens)") == 2
