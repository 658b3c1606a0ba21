"""The field records on Apple silicon and RTX 40-series cards (measurements/memory_field_2026.yaml):
their declared held-out split, the llama.cpp buffers they printed, and the llama.cpp rule that a
build reserves logits for one output row (PR #23861), which the held-out M1 Max log scores."""

from pathlib import Path

import pytest
import yaml

from inferplan.catalog.loader import DATA_DIR
from inferplan.catalog.memory_rules import memory_rule
from inferplan.memory.context_cache import compute_buffer_bytes
from inferplan.memory.resolve import resolve_model
from inferplan.validation.memory import validate_memory

MiB = 2**20
FILE = Path(DATA_DIR) / "measurements" / "memory_field_2026.yaml"
WHOLE_UBATCH, ONE_ROW = "b9272", "b9273"  # issue #23527's build, and the first after it


def test_the_held_out_split_follows_the_rule_declared_in_the_file():
    points = yaml.safe_load(FILE.read_text())["memory_points"]
    assert len(points) >= 3
    assert [p["split"] for p in points] == ["development" if i % 2 == 0 else "holdout" for i in range(len(points))]


def test_the_current_build_reserves_one_row_of_logits(catalog):
    assert memory_rule(catalog, "llamacpp").compute_graph.output_rows == 1  # the default is the current rule
    assert memory_rule(catalog, "llamacpp", ONE_ROW).compute_graph.output_rows == 1
    assert memory_rule(catalog, "llamacpp", WHOLE_UBATCH).compute_graph.output_rows is None


def test_one_output_row_leaves_the_attention_branch_as_the_buffer(catalog):
    # l26-02 (ollama issue #17024): 32768 cells, flash attention on, n_ubatch 512 -> 109.53 MiB printed
    arch = resolve_model(catalog, "qwen3-30b-a3b").architecture
    kwargs = dict(context_tokens=32768, ubatch_tokens=512, flash_attention=True)
    one_row, _ = compute_buffer_bytes(memory_rule(catalog, "llamacpp", ONE_ROW).compute_graph, catalog, arch, **kwargs)
    whole, _ = compute_buffer_bytes(memory_rule(catalog, "llamacpp", WHOLE_UBATCH).compute_graph, catalog, arch,
                                    **kwargs)
    assert one_row == pytest.approx(109.53 * MiB, rel=0.12)
    assert whole == pytest.approx(512 * (151936 + 2048) * 4, rel=1e-9)  # the ubatch's logits: 300.75 MiB


def test_validate_memory_scores_the_new_records(catalog):
    by_id = {c.id: c for c in validate_memory(catalog).checks}
    for record in ("l26-01-qwen25-1p5b-apple-m4-metal-4k", "l26-02-qwen3-coder-30b-apple-m1max-ollama-32k",
                   "l26-03-qwen25-3b-rtx4080s-cuda-4k"):
        check = by_id[record]
        assert check.kv_error == pytest.approx(0.0, abs=1e-3), record  # the KV buffer for the padded context
        assert abs(check.compute_buffer_error) < 0.12, record
    # fails when the one-row rule is unwired: the whole ubatch's logits would be +175 %
    assert by_id["l26-02-qwen3-coder-30b-apple-m1max-ollama-32k"].split == "holdout"


def test_the_cards_kept_for_field_records_are_listed_by_the_grid_only_when_named(catalog):
    from inferplan.memory.matrix import fits_matrix

    small = {m.id for m in catalog.models if not m.in_default_grid}
    assert {"qwen2.5-1.5b", "qwen2.5-3b"} <= small
    default = fits_matrix(catalog=catalog, gpus=["h100-sxm"])
    assert not small & {c.model for c in default.cells} and default.cells
    named = fits_matrix(catalog=catalog, models=["qwen2.5-3b"], gpus=["h100-sxm"])
    assert {c.model for c in named.cells} == {"qwen2.5-3b"}
