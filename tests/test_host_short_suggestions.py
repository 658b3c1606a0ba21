"""When the host RAM is short: the answers that fix the host RAM, not the GPU."""

from __future__ import annotations

import pytest

from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.memory.suggest import fit_or_suggest
from inferplan.shells.api import create_app
from inferplan.shells.cli import app

# the GPU holds the model with no offload; only the host KV tier overfills the host RAM
TIER_TOO_LARGE = {
    "vLLM --kv-offloading-size": dict(model="gpt-oss-20b", gpu="rtx-4090", engine="vllm", kv_offloading_size=100,
                                      host_memory_gb=64),
    "SGLang --hicache-size": dict(model="gpt-oss-20b", gpu="rtx-4090", engine="sglang", hicache_size=100,
                                  host_memory_gb=64),
    "SGLang --hicache-ratio": dict(model="gpt-oss-20b", gpu="rtx-4090", engine="sglang", hicache_ratio=30,
                                   host_memory_gb=64),
}


@pytest.mark.parametrize("case", TIER_TOO_LARGE)
def test_a_tier_too_large_for_the_host_gets_the_largest_tier_that_fits_first(catalog, case):
    d = Deployment(**TIER_TOO_LARGE[case])
    r = fit_or_suggest(d, catalog)
    assert not r.fits and r.shortfall_bytes == 0 and r.host_shortfall_bytes > 0
    first = r.suggestions[0]
    assert first.kind == "host_tier"
    (field, value), = first.changes.items()
    assert 0 < value < getattr(d, field)
    assert fit(d.model_copy(update=first.changes), catalog).fits
    step = 0.1 if field == "hicache_ratio" else 1.0
    assert not fit(d.model_copy(update={field: value + step}), catalog).fits  # the largest that fits, not merely one


@pytest.mark.parametrize("case", TIER_TOO_LARGE)
def test_when_the_gpu_holds_the_model_no_answer_moves_weights_off_it(catalog, case):
    r = fit_or_suggest(Deployment(**TIER_TOO_LARGE[case]), catalog)
    assert all(s.kind != "offload" and "engine" not in s.changes for s in r.suggestions)
    assert r.offload_note is None  # never "the least that fits the GPU" when none is needed


def test_a_stated_weight_offload_the_gpu_does_not_need_is_dropped_when_the_host_is_short(catalog):
    d = Deployment(model="gpt-oss-20b", gpu="rtx-4090", engine="vllm", cpu_offload_gb=8, host_memory_gb=8)
    r = fit_or_suggest(d, catalog)
    assert not r.fits and r.shortfall_bytes == 0
    s = next(s for s in r.suggestions if s.kind == "offload")
    assert s.changes == {"cpu_offload_gb": None} and fit(d.model_copy(update=s.changes), catalog).fits


def test_no_tier_is_suggested_when_the_host_holds_none_the_engine_starts_with(catalog):
    """13 GiB less SGLang's 10 GiB reserve holds no HiCache pool larger than the GPU's own (3.78 GiB at 0.5.23)."""
    d = Deployment(model="gpt-oss-20b", gpu="rtx-4090", engine="sglang", hicache_size=100, host_memory_gb=13)
    first = fit_or_suggest(d, catalog).suggestions[0]
    assert first.kind == "host_tier" and first.changes == {"hicache_size": None}
    assert fit(d.model_copy(update=first.changes), catalog).fits


BOTH_SHORT = dict(model="llama-3.3-70b", gpu="rtx-4090", engine="llamacpp", quantization="q4_k_m", n_gpu_layers=60,
                  host_memory_gb=8, max_model_len=32768)


def test_both_shortfalls_are_in_the_answer_and_printed(catalog):
    r = fit_or_suggest(Deployment(**BOTH_SHORT), catalog)
    assert r.shortfall_bytes > 0 and r.host_shortfall_bytes == pytest.approx(
        r.host_memory_bytes_used - r.host_memory_budget_bytes)
    shown = CliRunner().invoke(app, ["fit", "--model", "llama-3.3-70b", "--gpu", "rtx-4090", "--engine", "llamacpp",
                                     "-q", "q4_k_m", "-ngl", "60", "--host-memory-gb", "8", "--max-model-len", "32768"])
    out = " ".join(shown.stdout.split())
    assert "shortfall: 12.95 GiB per GPU" in out and "host RAM short by 9.30 GiB" in out  # -ngl 60: 59 layers and the output layer


def test_a_host_nothing_fits_is_said_once_with_its_figures(tmp_path):
    client = TestClient(create_app(tmp_path / "test.db"))
    got = client.post("/api/fit", json=dict(model="deepseek-r1", gpu="rtx-5090", engine="ktransformers",
                                            host_memory_gb=192))
    assert got.status_code == 200, got.text
    body = got.json()
    assert body["shortfall_bytes"] > 0 and body["host_shortfall_bytes"] > 400 * 2**30
    assert not body["suggestions"] and "192 GiB of host RAM" in body["offload_note"]


# a tier larger than the host RAM and a GPU short at the stated context: only a smaller tier with a GPU change fits
TIER_AND_GPU_SHORT = ["fit", "--model", "qwen3-8b", "--gpu", "RTX 4090", "--kv-offloading-size", "64",
                      "--host-memory-gb", "32", "--engine-version", "0.33.0"]


def _ready_commands(argv: list[str]) -> list[list[str]]:
    import shlex

    shown = CliRunner().invoke(app, argv)
    assert "does not fit" in " ".join(shown.stdout.split())
    lines = shown.stdout.splitlines()
    return [shlex.split(line)[1:] for line in lines[lines.index("To fit, run one of:") + 1:]
            if line.strip().startswith("inferplan fit ")]


def test_a_host_tier_with_the_gpu_short_too_gets_ready_commands_that_fit_when_run():
    commands = _ready_commands(TIER_AND_GPU_SHORT)
    assert len(commands) >= 2  # a shorter context and smaller weights, at least
    for argv in commands:
        size = float(argv[argv.index("--kv-offloading-size") + 1]) if "--kv-offloading-size" in argv else 0
        assert size < 64  # every answer shrinks the tier the host RAM cannot hold
        assert {"--max-model-len", "--quantization", "--gpus", "--gpu-memory-utilization"} & set(argv)  # and the GPU side
        ran = CliRunner().invoke(app, argv)
        assert ran.exit_code == 0 and ": fits" in " ".join(ran.stdout.split()), (argv, ran.stdout)


def test_with_both_short_the_answers_are_sought_at_the_largest_tier_the_host_ram_holds(catalog):
    d = Deployment(model="qwen3-8b", gpu="rtx-4090", kv_offloading_size=64, host_memory_gb=32, engine_version="0.33.0")
    r = fit_or_suggest(d, catalog)
    assert r.shortfall_bytes > 0 and r.host_shortfall_bytes > 0
    kinds = {s.kind for s in r.suggestions}
    assert {"context", "quantization"} <= kinds
    for s in r.suggestions:
        assert fit(d.model_copy(update=s.changes), catalog).fits
        tier = s.changes["kv_offloading_size"]
        if "engine" in s.changes:  # another engine's build that holds it on the GPU: vLLM's tier left out
            assert tier is None
            continue
        # the largest tier: one GiB more overfills the host RAM with the same GPU change
        assert fit(d.model_copy(update={**s.changes, "kv_offloading_size": tier + 1}), catalog).host_shortfall_bytes > 0
    assert r.offload_note is None  # no figure driven by the tier the host RAM cannot hold


def test_with_both_short_and_no_tier_held_sglang_drops_the_tier_or_shrinks_it(catalog):
    d = Deployment(model="qwen3-8b", gpu="rtx-4090", engine="sglang", hicache_ratio=20, host_memory_gb=32)
    r = fit_or_suggest(d, catalog)
    assert r.suggestions and r.shortfall_bytes > 0
    for s in r.suggestions:
        assert (s.changes.get("hicache_ratio") or 0) < 20 and fit(d.model_copy(update=s.changes), catalog).fits
