"""An acceptance pack's import line carries everything the pack predicted with — the KTransformers release, the
host's sockets and bandwidth, a host KV-cache tier, speculative decoding at its acceptance rate — so the run it
imports is compared (``validate --mine``) with the same deployment and workload, and the same predictions."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.shells.api import create_app
from inferplan.shells.cli import app

from acceptance_runs import compared as _compared, predicted as _predicted, run_the_import_line as _run_the_import_line

runner = CliRunner()
KT = ["--model", "deepseek-v3", "--gpu", "rtx-4090", "--engine", "ktransformers", "-q", "gguf-q4_k_m",
      "--kt-num-gpu-experts", 0, "--host-memory-gb", 1024, "--max-model-len", 4096]
KT_HOST = ["--kt-release", "kt-kernel", "--host-sockets", 2, "--host-memory-bandwidth-gb-per-s", 614.4]
QWEN = ["--model", "qwen3-30b-a3b", "--gpu", "h100", "--host-memory-gb", 256]


def cli(*args):
    return runner.invoke(app, [str(a) for a in args])


def _pack(out: Path, *flags) -> tuple[dict, list[str]]:
    r = cli("acceptance", *flags, "--workload", "chat-seat", "--out", out)
    assert r.exit_code == 0, r.output
    line = next(x for x in (out / "README.md").read_text().splitlines() if "measurements import" in x)
    return json.loads((out / "predictions.json").read_text()), shlex.split(line)


def test_a_ktransformers_pack_predicts_and_imports_with_the_release_and_the_host(tmp_path):
    predictions, line = _pack(tmp_path / "pack", *KT, *KT_HOST)
    deployment = predictions["deployment"]
    assert (deployment["kt_release"], deployment["host_sockets"], deployment["host_memory_bandwidth_gb_per_s"]) == \
        ("kt-kernel", 2, 614.4)
    plain, _ = _pack(tmp_path / "plain", *KT)  # the host's sockets and bandwidth change what is predicted
    assert _predicted(plain) != _predicted(predictions)
    for flag, value in (("--kt-release", "kt-kernel"), ("--host-sockets", "2"), ("--host-memory-bandwidth-gb-per-s", "614.4"),
                        ("--kt-num-gpu-experts", "0"), ("--host-memory-gb", "1024.0")):
        assert line[line.index(flag) + 1] == value
    run = _run_the_import_line(tmp_path / "pack", predictions, line, tmp_path / "runs.db")
    assert (run["kt_release"], run["host_sockets"], run["host_memory_bandwidth_gb_per_s"]) == ("kt-kernel", 2, 614.4)
    assert _compared(tmp_path / "runs.db") == _predicted(predictions)


def test_a_release_the_launch_command_does_not_start_is_refused_by_its_flag(tmp_path):
    r = cli("acceptance", *KT, "--kt-release", "v0.2", "--workload", "chat-seat", "--out", tmp_path / "pack")
    assert r.exit_code == 2 and "--kt-release" in r.output and "kt-kernel" in r.output


@pytest.mark.parametrize("flags", [
    ["--engine", "vllm", "--engine-version", "0.33.0", "--kv-offloading-size", 64, "--kv-offloading-backend", "lmcache",
     "--speculative-tokens", 3, "--speculative-method", "ngram", "--acceptance-rate", 0.6123456789],
    ["--engine", "sglang", "--hicache-ratio", 2, "--speculative-tokens", 3, "--speculative-method", "eagle3",
     "--draft-model", "Tengyunw/qwen3_30b_moe_eagle3"],
])
def test_a_pack_with_drafts_and_a_host_kv_tier_is_compared_as_it_predicted(tmp_path, flags):
    predictions, line = _pack(tmp_path / "pack", *QWEN, *flags)
    assert not any(x.startswith("#") for x in line)
    assert line[line.index("--speculative-tokens") + 1] == "3"
    # a rate stated to the pack is in its import line; a draft's published or the default one is left to the import,
    # which resolves the same one and records it as such rather than as stated
    stated = "--acceptance-rate" in flags
    assert ("--acceptance-rate" in line) == stated
    assert not stated or float(line[line.index("--acceptance-rate") + 1]) == predictions["acceptance_rate"]
    tier = "--kv-offloading-size" if "vllm" in flags else "--hicache-ratio"
    assert line[line.index(tier) + 1] == str(float(flags[flags.index(tier) + 1]))
    run = _run_the_import_line(tmp_path / "pack", predictions, line, tmp_path / "runs.db")
    assert (run["speculative_tokens"], run["speculative_method"], run["acceptance_rate"]) == \
        (3, predictions["speculative"]["method"], predictions["acceptance_rate"])
    assert run["draft_model"] == predictions["speculative"].get("draft_model")
    assert run["acceptance_origin"] == ("stated" if stated else "assumed")  # the sglang case's draft publishes none
    assert _compared(tmp_path / "runs.db") == _predicted(predictions)
    shown = cli("measurements", "show", run["id"], "--db", tmp_path / "runs.db")
    assert "--speculative-tokens 3" in " ".join(shown.stdout.split()) and tier in " ".join(shown.stdout.split())


DATA = Path(__file__).parent / "data" / "measurements"
RUN = [DATA / "measured.csv", "--model", "qwen3-30b-a3b", "--gpu", "h100", "--engine", "vllm"]


@pytest.mark.parametrize(("flags", "flag", "allowed"), [
    (["--hicache-ratio", 2], "--hicache-ratio", "sglang"),
    (["--engine", "ktransformers", "--kt-release", "v9"], "--kt-release", "kt-kernel"),
    (["--speculative-tokens", 2, "--speculative-method", "mtp"], "--speculative-method", "MTP layers"),
    (["--speculative-tokens", 2, "--speculative-method", "medusa"], "--speculative-method", "ngram, draft_model, eagle3, mtp"),
    (["--acceptance-rate", 0.8], "--acceptance-rate", "--speculative-tokens"),
    (["--draft-model", "x/y"], "--draft-model", "--speculative-tokens"),
    (["--speculative-tokens", 40], "--speculative-tokens", "at most 32"),
    (["--speculative-tokens", 2, "--acceptance-rate", 1.5], "--acceptance-rate", "at most 1"),
    (["--kv-offloading-size", 4, "--kv-offloading-backend", "foo"], "--kv-offloading-backend", "native, lmcache"),
    (["--host-sockets", 0], "--host-sockets", "at least 1"),
])
def test_a_bad_value_is_refused_naming_its_flag_and_what_is_allowed(tmp_path, flags, flag, allowed):
    r = cli("measurements", "import", *RUN, *flags, "--db", tmp_path / "runs.db", "--json")
    assert r.exit_code == 2, r.output
    error = json.loads(r.stdout)["error"]
    assert error["field"] == flag and allowed in error["allowed"]
    assert json.loads(cli("measurements", "list", "--db", tmp_path / "runs.db", "--json").stdout)["measurements"] == []


def test_perf_and_plan_do_not_take_a_drafting_run_for_one_without_drafts(tmp_path):
    db = tmp_path / "runs.db"
    at = ["--input-len", 1024, "--output-len", 256, "--concurrency", 8, "--db", db, "--json"]
    deployment = ["--model", "llama-3.1-8b", "--gpu", "h100", "--engine", "vllm"]
    assert cli("measurements", "import", DATA / "vllm_bench_serve_c8.json", *deployment, "--speculative-tokens", 2,
               "--db", db, "--json").exit_code == 2  # ngram drafts (deploy's method here) have no default acceptance
    assert cli("measurements", "import", DATA / "vllm_bench_serve_c8.json", *deployment, "--speculative-tokens", 2,
               "--acceptance-rate", 0.7, "--db", db).exit_code == 0
    assert json.loads(cli("perf", *deployment, *at).stdout)["source"] == "calibrated-model"
    assert cli("measurements", "import", DATA / "vllm_bench_serve_c32.json", *deployment, "--db", db).exit_code == 0
    assert json.loads(cli("perf", *deployment, *at).stdout)["measured_record"] == 2  # the run without drafts

    from inferplan.catalog.loader import load_catalog
    from inferplan.performance.local_runs import as_profiles
    from inferplan.store import Store

    drafts = {p.id: p.speculative for p in as_profiles(Store(db).user_runs(), load_catalog())}
    assert drafts["user-run-2-1024-256"] is None  # the drafted run's profile states its drafts: plan names it unused
    assert drafts["user-run-1-1024-256"].startswith("2 draft tokens a step")


def test_the_api_stores_and_refuses_them_as_the_cli_does(tmp_path):
    client = TestClient(create_app(tmp_path / "api.db"))
    body = {"files": [{"name": "measured.csv", "content": (DATA / "measured.csv").read_text()}],
            "provenance": {"model": "qwen3-30b-a3b", "gpu": "h100", "engine": "sglang", "hicache_size": 40,
                           "host_memory_gb": 256, "speculative_tokens": 2, "acceptance_rate": 0.8}}
    r = client.post("/api/measurements", json=body)
    assert r.status_code == 201, r.text
    (run,) = r.json()
    assert (run["hicache_size"], run["speculative_tokens"], run["speculative_method"], run["acceptance_rate"]) == \
        (40, 2, "ngram", 0.8)  # the method deploy launches for a model without MTP layers
    bad = client.post("/api/measurements", json={**body, "provenance": {**body["provenance"], "speculative_method": "mtp"}})
    assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["body", "provenance", "speculative_method"]


def test_a_system_packs_import_line_states_the_host_its_card_gave_the_predictions(tmp_path):
    """The import line names the accelerator alone: the host RAM and bandwidth an offload plan took from the
    system card are stated in it, so the run is predicted on the same host."""
    flags = ["--model", "llama-3.1-8b", "--system", "hgx-h100", "--gpus", 1, "--engine", "vllm", "--cpu-offload-gb", 4,
             "--kv-offloading-size", 100]
    predictions, line = _pack(tmp_path / "pack", *flags)
    assert "host_memory_gb" not in predictions["deployment"]  # the card's, not stated
    assert float(line[line.index("--host-memory-gb") + 1]) == 2000  # hgx-h100: 2 TB, read as GiB
    assert float(line[line.index("--host-memory-bandwidth-gb-per-s") + 1]) == pytest.approx(614.4)
    _run_the_import_line(tmp_path / "pack", predictions, line, tmp_path / "runs.db")
    assert _compared(tmp_path / "runs.db") == _predicted(predictions)
