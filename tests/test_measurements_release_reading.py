"""The engine release a run names is read from the texts people paste (Docker tags, llama-server's --version line, a
bare llama.cpp build number), and where it is not planned at, the note says why: no memory rule for that release
(naming the covered ranges), a release that predates the model's architecture (naming the first that loads it), or
a variant the release does not have."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferplan.catalog.memory_rules import stated_release
from inferplan.measurements.compare import compare_run
from inferplan.measurements.records import RunProvenance, read_runs

DATA = Path(__file__).parent / "data" / "measurements"


@pytest.mark.parametrize(("engine", "text", "release"), [
    ("vllm", "vllm/vllm-openai:v0.11.0", "0.11.0"),
    ("sglang", "lmsysorg/sglang:v0.5.3-cu126", "0.5.3-cu126"),
    ("llamacpp", "version: 6935 (3f4fc97f)", "b6935"),
    ("llamacpp", "6935", "b6935"),
    ("llamacpp", "8f1d81a", None),  # a commit alone
    ("vllm", "6935", None),  # a bare number is a build only where the engine's releases are builds
])
def test_common_version_texts_name_their_release(catalog, engine, text, release):
    assert stated_release(catalog, engine, text) == release


def test_a_docker_tag_plans_at_its_release_and_says_no_note(catalog):
    given = RunProvenance(model="llama-3.1-8b", gpu="h100-sxm", engine="vllm", engine_version="vllm/vllm-openai:v0.10.1",
                          kv_cache_tokens=400_000, measured_by="lab")
    (run,) = read_runs(catalog, [("c8.json", (DATA / "vllm_bench_serve_c8.json").read_bytes())], given)
    compared = compare_run(run, catalog)
    assert "0.8-0.10" in compared.memory_rule and compared.notes == ()


def note(catalog, name, **given):
    stated = RunProvenance(gpu="h100-sxm", measured_by="lab", kv_cache_tokens=300_000, **given)
    (run,) = read_runs(catalog, [(name, (DATA / name).read_bytes())], stated)
    (text,) = compare_run(run, catalog).notes
    assert text.endswith("predicted at the engine's default release")
    return text


def test_a_release_no_memory_rule_covers_names_the_covered_ranges(catalog):
    text = note(catalog, "sglang_bench_serving.jsonl", model="llama-3.1-8b", engine="sglang", engine_version="0.5.2")
    assert "no sglang release 0.5.2 has a known memory rule" in text and "0.2.0-0.4.6, 0.5.3 and later" in text
    assert "such as 0.11.0" not in text


def test_a_release_that_predates_the_models_architecture_names_the_first_that_loads_it(catalog):
    text = note(catalog, "vllm_bench_serve_c8.json", model="qwen3-30b-a3b", engine_version="0.6.4")
    assert "cannot load Qwen3MoeForCausalLM, first loaded by 0.8.4" in text


def test_v0_named_on_a_release_without_v0_says_so(catalog):
    text = note(catalog, "vllm_bench_serve_c8.json", model="llama-3.1-8b", engine_version="0.11.0 V0")
    assert "vllm 0.11.0 has no V0 memory rule" in text and "0.7.0-0.10.2 V0" in text


def test_a_text_with_no_release_says_it_names_none(catalog):
    assert "names no vllm release number" in note(catalog, "vllm_bench_serve_c8.json", model="llama-3.1-8b",
                                                  engine_version="nightly")
