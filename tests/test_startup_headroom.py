"""Start-up after the KV cache is sized (memory/startup.py, the rules' `startup` data): what vLLM V1
allocates outside gpu_memory_utilization must fit in the headroom the fraction leaves, or the fit
says it fails at start-up, why, and which settings start."""

import shutil

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.catalog.loader import DATA_DIR, load_files
from inferplan.catalog.memory_rules import MemoryRule
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.memory.startup import StartupCheck, startup_fix
from inferplan.memory.suggest import fit_or_suggest
from inferplan.shells.api import create_app
from inferplan.shells.cli import app
from inferplan.validation.memory import check_point

GiB = 2**30
RULES = DATA_DIR / "engine_memory_rules.yaml"
GPT_OSS_VOCAB = 201_088  # openai/gpt-oss-20b config.json vocab_size
# vLLM 0.19 on an H100 at the large-GPU defaults: 1024 sequences, 0.95 of the device
TIGHT = Deployment(model="gpt-oss-20b", gpu="h100-sxm", engine="vllm", engine_version="0.19.0",
                   tensor_parallel_size=2, gpu_memory_utilization=0.95, max_model_len=8192)


def test_start_up_that_overflows_the_headroom_does_not_fit_and_says_why(catalog):
    r = fit(TIGHT, catalog)
    headroom = r.gpu_memory_bytes * (1 - 0.95)
    sampler = catalog.constant("vllm-v017-sampler-bytes-per-seq-vocab") * 1024 * GPT_OSS_VOCAB
    needed = (catalog.constant("cuda-context-bytes-per-gpu") + sampler
              + catalog.constant("vllm-v019-cudagraph-pool-bytes-per-gpu"))
    assert r.kv_cache_bytes_per_gpu > r.sequence_bytes_per_gpu  # the KV cache alone would fit
    assert not r.fits and r.shortfall_bytes == 0
    assert r.startup_shortfall_bytes_per_gpu == pytest.approx(needed - headroom, rel=1e-9)
    # the failed run's single allocation (1024 rows x 201,088 fp32 logits, ~786 MiB) is part of the warm-up
    assert sampler > 1024 * GPT_OSS_VOCAB * 4
    assert "start-up fails" in r.startup_note and "1,024 sequences" in r.startup_note
    assert fit(TIGHT.model_copy(update={"gpu_memory_utilization": 0.9}), catalog).fits


def test_releases_whose_rule_states_no_start_up_check_are_not_refused_by_it(catalog):
    r = fit(TIGHT.model_copy(update={"engine_version": "0.16.0"}), catalog)
    assert r.startup_note is None and r.startup_shortfall_bytes_per_gpu == 0


def _catalog_edited(tmp_path, edit):
    data = yaml.safe_load(RULES.read_text())
    edit({r["id"]: r for r in data["memory_rules"]})
    folder = tmp_path / "data"
    shutil.copytree(DATA_DIR, folder)
    (folder / RULES.name).write_text(yaml.safe_dump(data, sort_keys=False))
    return load_files(sorted(folder.glob("**/*.yaml")), data_dir=folder)


def test_the_verdict_comes_from_the_rule_data(tmp_path):
    unwired = _catalog_edited(tmp_path, lambda rules: rules["vllm-v1-triton-sampler"].pop("startup"))
    assert fit(TIGHT, unwired).fits


def test_development_verdicts_of_the_warm_up_are_predicted(catalog):
    records = catalog.memory_points.records
    failed = check_point(records["m21-gptoss-20b-tp2-h100-v0190-util095-fails"], catalog)
    started = check_point(records["m22-gptoss-20b-tp2-h100-v0190-util090"], catalog)
    assert (failed.measured_fits, failed.predicted_fits) == (False, False)
    assert (started.measured_fits, started.predicted_fits) == (True, True)


def test_fit_suggests_the_fraction_and_the_sequences_that_start(catalog):
    r = fit_or_suggest(TIGHT, catalog)
    startup = {k: s.changes[k] for s in r.suggestions if s.kind == "startup" for k in s.changes}
    assert set(startup) == {"gpu_memory_utilization", "max_num_seqs"}
    assert startup["gpu_memory_utilization"] < 0.95 and startup["max_num_seqs"] < 1024
    for field, value in startup.items():  # each suggested setting starts, and one step past it does not
        assert fit(TIGHT.model_copy(update={field: value}), catalog).fits
    past = {"gpu_memory_utilization": round(startup["gpu_memory_utilization"] + 0.01, 2),
            "max_num_seqs": startup["max_num_seqs"] + 1}
    for field, value in past.items():
        assert not fit(TIGHT.model_copy(update={field: value}), catalog).fits
    assert not any(s.kind == "offload" for s in r.suggestions) and r.offload_note is None


def test_the_cli_prints_the_reason_and_ready_commands():
    out = CliRunner().invoke(app, ["fit", "--model", "gpt-oss-20b", "--gpu", "h100-sxm", "--tensor-parallel-size", "2",
                                   "--engine-version", "0.19.0", "--gpu-memory-utilization", "0.95",
                                   "--max-model-len", "8192"], terminal_width=400)
    assert out.exit_code == 1, out.output  # fit's status for "does not fit"
    assert "start-up:" in out.output and "GiB per GPU short" in out.output
    assert "--gpu-memory-utilization 0.94" in out.output and "--max-num-seqs " in out.output


def test_graph_constants_only_where_graphs_are_captured_after_the_kv_cache():
    rule = yaml.safe_load(RULES.read_text())["memory_rules"]
    estimated = next(r for r in rule if r["id"] == "vllm-v1-graphs-estimated")
    estimated["startup"] = {**estimated["startup"], "graph_constants": ["a", "b"]}
    with pytest.raises(ValueError, match="graph_constants"):
        MemoryRule.model_validate(estimated)


def test_the_api_answers_with_the_reason_and_the_settings_that_start(tmp_path):
    body = TestClient(create_app(tmp_path / "test.db")).post("/api/fit", json=TIGHT.model_dump(exclude_unset=True)).json()
    assert body["fits"] is False and body["startup_shortfall_bytes_per_gpu"] > 0
    assert "start-up fails" in body["startup_note"]
    assert {k for s in body["suggestions"] if s["kind"] == "startup" for k in s["changes"]} == {
        "gpu_memory_utilization", "max_num_seqs"}


@given(total_gib=st.floats(8, 200), context_gib=st.floats(0, 2), graphs_gib=st.floats(0, 3),
       per_seq_mib=st.floats(0.01, 10), seqs=st.integers(1, 2048), fraction=st.floats(0.3, 0.99))
def test_the_suggested_settings_are_the_limits_that_start(total_gib, context_gib, graphs_gib, per_seq_mib, seqs,
                                                          fraction):
    total, per_seq = total_gib * GiB, per_seq_mib * 2**20

    def check(f, rows):
        return StartupCheck(headroom_bytes_per_gpu=total * (1 - f), context_bytes_per_gpu=context_gib * GiB,
                            graph_bytes_per_gpu=graphs_gib * GiB, sampler_bytes_per_gpu=per_seq * rows,
                            sampler_bytes_per_seq=per_seq)

    fix = startup_fix(check(fraction, seqs), total)
    if fix.memory_fraction is not None:
        assert check(fix.memory_fraction, seqs).starts
        assert fix.memory_fraction + 0.01 > 1 or not check(fix.memory_fraction + 0.01 + 1e-9, seqs).starts
    if fix.max_num_seqs is not None:
        assert check(fraction, fix.max_num_seqs).starts and not check(fraction, fix.max_num_seqs + 1).starts
    else:
        assert not check(fraction, 1).starts


def test_the_row_limit_is_exact_where_the_quotient_rounds_down():
    # 4 GiB / 10,485.76 bytes is 409,600 rows exactly; the float quotient lands a hair under it
    check = StartupCheck(headroom_bytes_per_gpu=4 * GiB, context_bytes_per_gpu=0.0, graph_bytes_per_gpu=0.0,
                         sampler_bytes_per_gpu=10485.76, sampler_bytes_per_seq=10485.76)
    assert startup_fix(check, 8 * GiB).max_num_seqs == 409_600


def test_the_row_limit_is_settled_with_the_checks_own_sum():
    # 5 GiB of headroom, 0.4 GiB context, 1 GiB graphs, 0.4 MiB a row: the remainder over the row size
    # and the check's own sum disagree in the last bit at 9,216 rows; the check's sum decides
    def check(rows):
        return StartupCheck(headroom_bytes_per_gpu=5 * GiB, context_bytes_per_gpu=0.4 * GiB, graph_bytes_per_gpu=1 * GiB,
                            sampler_bytes_per_gpu=0.4 * 2**20 * rows, sampler_bytes_per_seq=0.4 * 2**20)

    fix = startup_fix(check(20_000), 8 * GiB)
    assert fix.max_num_seqs == 9216 and check(9216).starts and not check(9217).starts
