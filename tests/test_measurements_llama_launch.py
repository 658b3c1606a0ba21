"""A llama-bench file records how llama.cpp was launched in every row (n_gpu_layers, n_cpu_moe, n_batch, n_ubatch,
type_k/type_v, flash_attn, no_kv_offload): the importer takes them where the user stated none, refuses a stated one
that contradicts the file naming both, and refuses a file whose rows were launched differently (a sweep), so a
partly offloaded run is never taken as a measurement of the all-on-GPU deployment."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.measurements.records import RunProvenance, read_runs
from inferplan.performance.serving import estimate

DATA = Path(__file__).parent / "data" / "measurements"
ROWS = json.loads((DATA / "llama_bench.json").read_text())
OFFLOADED = {"n_gpu_layers": 20, "n_ubatch": 256, "n_batch": 1024, "type_k": "q8_0", "type_v": "q8_0"}


def read(catalog, rows_or_text, name="lb.json", **given):
    data = rows_or_text if isinstance(rows_or_text, str) else json.dumps(rows_or_text)
    (run,) = read_runs(catalog, [(name, data.encode())], RunProvenance(gpu="rtx-4090", **given))
    return run


def test_the_launch_a_file_records_fills_the_run(catalog):
    run = read(catalog, [r | OFFLOADED for r in ROWS])
    assert (run.n_gpu_layers, run.ubatch_size, run.max_num_batched_tokens, run.kv_cache_dtype) == (20, 256, 1024, "q8_0")


def test_all_layers_on_the_gpu_is_the_default_launch_and_still_an_exact_match(catalog):
    run = read(catalog, ROWS)  # -ngl 99 on a 32-layer model: all of them
    assert run.n_gpu_layers is None and (run.ubatch_size, run.max_num_batched_tokens) == (512, 2048)
    d = Deployment(model="llama-3.1-8b", gpu="rtx-4090", engine="llamacpp", quantization="gguf-q4_0")
    est = estimate(d, Workload(input_len=512, output_len=128, concurrency=1), catalog,
                   user_runs=(run.model_copy(update={"id": 1}),))
    assert est.source == "measured-local" and not any("launched with" in a for a in est.assumptions)


def test_a_partly_offloaded_run_is_no_run_of_the_all_on_gpu_deployment(catalog):
    run = read(catalog, [r | OFFLOADED for r in ROWS]).model_copy(update={"id": 1})
    d = Deployment(model="llama-3.1-8b", gpu="rtx-4090", engine="llamacpp", quantization="gguf-q4_0")
    est = estimate(d, Workload(input_len=512, output_len=128, concurrency=1), catalog, user_runs=(run,))
    assert est.source != "measured-local"


@pytest.mark.parametrize(("key", "value"), [("n_gpu_layers", 10), ("n_ubatch", 256), ("flash_attn", True)])
def test_a_sweep_is_refused_naming_the_key(catalog, key, value):
    with pytest.raises(InvalidScenarioError) as exc:
        read(catalog, ROWS + [r | {key: value} for r in ROWS])
    assert exc.value.field == f"[2].{key}" and "one file per launch" in str(exc.value)


def test_a_csv_sweep_is_refused_too(catalog):
    text = (DATA / "llama_bench.csv").read_text()
    rows = list(csv.DictReader(io.StringIO(text)))
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows([rows[0], rows[1] | {"n_gpu_layers": "10"}])
    with pytest.raises(InvalidScenarioError) as exc:
        read(catalog, out.getvalue(), "lb.csv")
    assert exc.value.field == "line 3: n_gpu_layers"


def test_a_stated_setting_the_file_contradicts_is_refused_naming_both(catalog):
    with pytest.raises(InvalidScenarioError) as exc:
        read(catalog, [r | OFFLOADED for r in ROWS], n_gpu_layers=30)
    assert exc.value.field == "n_gpu_layers" and "30" in str(exc.value) and "20" in str(exc.value)
    assert read(catalog, [r | OFFLOADED for r in ROWS], n_gpu_layers=20, ubatch_size=256).n_gpu_layers == 20


def test_k_and_v_caches_of_two_types_are_refused(catalog):
    with pytest.raises(InvalidScenarioError) as exc:
        read(catalog, [r | {"type_k": "q8_0", "type_v": "f16"} for r in ROWS])
    assert exc.value.field == "type_k" and "type_v" in str(exc.value)


def test_the_markdown_tables_ngl_column_is_read(catalog):
    text = (DATA / "llama_bench.md").read_text().replace("|  99 |", "|  20 |")
    assert read(catalog, text, "lb.md", model="llama-3.1-8b").n_gpu_layers == 20
