"""What runs on N GPUs of one kind (performance/here.py what_runs_on), and its page view."""

import pytest

from inferplan.catalog.loader import load_catalog
from inferplan.memory.fit import fit
from inferplan.inputs.deployment import Deployment
from inferplan.performance.here import what_runs_on
from inferplan.report.homelab_view import homelab_view

CATALOG = load_catalog()


def test_a_model_runs_when_the_gpus_hold_it_and_more_gpus_never_run_fewer():
    one = what_runs_on("rtx-4090", 1, CATALOG, engine="vllm", quantizations=["int4-awq"])
    two = what_runs_on("rtx-4090", 2, CATALOG, engine="vllm", quantizations=["int4-awq"])
    ran_one = {m.model for m in one.models if m.fits}
    ran_two = {m.model for m in two.models if m.fits}
    assert ran_one <= ran_two and ran_two - ran_one
    for m in two.models:
        memory = fit(Deployment(model=m.model, gpu="rtx-4090", gpus=2, engine="vllm", quantization=m.quantization,
                                max_model_len=m.max_model_len), CATALOG)
        assert m.fits == memory.fits, m.model
        if m.fits and m.ttft_s is not None:
            assert m.output_tokens_per_s_per_user > 0


def test_the_rows_put_what_runs_first_fastest_first():
    r = what_runs_on("h100-sxm", 1, CATALOG)
    fits = [m.fits for m in r.models]
    assert fits == sorted(fits, reverse=True)
    speeds = [m.output_tokens_per_s_per_user for m in r.models if m.fits and m.output_tokens_per_s_per_user]
    assert speeds == sorted(speeds, reverse=True)
    view = homelab_view(r)
    assert view.rows[0].verdict == "runs" and view.rows[-1].verdict.startswith(("needs", "no layout"))


def test_the_api_names_an_unknown_gpu(tmp_path):
    from fastapi.testclient import TestClient

    from inferplan.shells.api import create_app

    r = TestClient(create_app(tmp_path / "h.db")).post("/api/views/homelab", json={"gpu": "RTX 9999", "gpus": 2})
    assert r.status_code == 422 and r.json()["error"]["field"] == "gpu"


def test_a_format_the_engine_does_not_load_is_refused_naming_quantization(tmp_path):
    from fastapi.testclient import TestClient

    from inferplan.shells.api import create_app

    client = TestClient(create_app(tmp_path / "h.db"))
    r = client.post("/api/views/homelab", json={"gpu": "RTX 4090", "gpus": 1, "engine": "vllm", "quantization": "q4_k_m"})
    assert r.status_code == 422 and r.json()["error"]["field"] == "quantization"
    assert "fp8" in r.json()["error"]["allowed"] and "gguf-q4_k_m" not in r.json()["error"]["allowed"]
    ok = client.post("/api/views/homelab", json={"gpu": "RTX 4090", "engine": "llama.cpp", "quantization": "q4_k_m"})
    assert ok.status_code == 200 and ok.json()["rows"]


@pytest.mark.parametrize("key", ["engine", "quantization", "gpu"])
def test_a_blank_name_is_refused_naming_its_key_not_read_as_the_default(tmp_path, key):
    from fastapi.testclient import TestClient

    from inferplan.shells.api import create_app

    r = TestClient(create_app(tmp_path / "h.db")).post("/api/views/homelab", json={"gpu": "RTX 4090", key: " "})
    assert r.status_code == 422 and r.json()["error"]["field"] == key
    assert "must not be empty" in r.json()["error"]["message"]


def test_a_model_the_gpu_does_not_hold_carries_the_offload_fit_suggests_and_its_speed_with_the_host_ram():
    """gpt-oss-120b on one RTX 4090 with llama.cpp: more GPUs, or the experts of some layers in host RAM
    (fit's suggestion), priced as perf prices that setting once the host RAM is stated."""
    from inferplan.memory.suggest import fit_or_suggest
    from inferplan.performance.serving import estimate
    from inferplan.inputs.workload import Workload

    asked = dict(engine="llamacpp", quantizations=["gguf-q4_k_m"])
    unstated = {m.model: m for m in what_runs_on("rtx-4090", 1, CATALOG, **asked).models}["gpt-oss-120b"]
    d = Deployment(model="gpt-oss-120b", gpu="rtx-4090", engine="llamacpp", quantization="gguf-q4_k_m",
                   max_model_len=unstated.max_model_len)
    suggested = next(s for s in fit_or_suggest(d, CATALOG).suggestions if s.kind == "offload")
    o = unstated.offload
    assert not unstated.fits and o is not None and o.fits_host is None and o.output_tokens_per_s_per_user is None
    assert o.changes["n_cpu_moe"] == suggested.changes["n_cpu_moe"] and f"--n-cpu-moe {o.changes['n_cpu_moe']}" in o.flag
    assert -(-o.host_memory_bytes_needed // 2**30) == suggested.changes["host_memory_gb"]  # fit's GiB, rounded up
    row = {r.model: r for r in homelab_view(what_runs_on("rtx-4090", 1, CATALOG, **asked)).rows}["gpt-oss-120b"]
    assert row.speed == "—" and "needs" in row.offload and "host RAM" in row.offload

    stated = what_runs_on("rtx-4090", 1, CATALOG, host_memory_gb=64, **asked)
    m = {m.model: m for m in stated.models}["gpt-oss-120b"]
    e = estimate(d.model_copy(update={**o.changes, "host_memory_gb": 64}), Workload(input_len=1024, output_len=256),
                 CATALOG)
    assert m.offload.fits_host and m.offload.output_tokens_per_s_per_user == e.output_tokens_per_s_per_user
    view = {r.model: r for r in homelab_view(stated).rows}
    assert view["gpt-oss-120b"].speed == f"{e.output_tokens_per_s_per_user:,.0f} tok/s"
    assert view["gpt-oss-120b"].offload.startswith(f"{o.flag}: ") and "of the 64 GiB of host RAM" in view["gpt-oss-120b"].offload
    # a host too small for the least offload says so, with no speed; the rows an offload runs come before them
    assert not view["deepseek-r1"].fits and "more than the 64 GiB stated" in view["deepseek-r1"].offload
    assert view["deepseek-r1"].speed == "—"
    order = [m.model for m in stated.models if not m.fits]
    assert order.index("gpt-oss-120b") < order.index("deepseek-r1")


def test_host_ram_on_unified_memory_is_refused_naming_host_memory_gb(tmp_path):
    from fastapi.testclient import TestClient

    from inferplan.shells.api import create_app

    client = TestClient(create_app(tmp_path / "h.db"))
    r = client.post("/api/views/homelab", json={"gpu": "apple-m4-max", "host_memory_gb": 64})
    assert r.status_code == 422 and r.json()["error"]["field"] == "host_memory_gb"
    ok = client.post("/api/views/homelab", json={"gpu": "RTX 4090", "engine": "llamacpp", "host_memory_gb": 64})
    rows = {row["model"]: row for row in ok.json()["rows"]}
    assert ok.status_code == 200 and rows["gpt-oss-120b"]["offload"].startswith("llama.cpp --n-cpu-moe ")


def test_a_llamacpp_rows_requests_at_once_are_the_parallel_slots_its_command_opens(tmp_path):
    """llama-server serves the --parallel slots it is started with at once, whatever memory is left over (fit's
    "at once"); a vLLM row keeps what its KV cache holds."""
    import re

    from fastapi.testclient import TestClient

    from inferplan.shells.api import create_app

    rows = TestClient(create_app(tmp_path / "h.db")).post("/api/views/homelab", json={"gpu": "rtx-3090", "gpus": 1}).json()
    llama = [r for r in rows["rows"] if r["command"].startswith("llama-server")]
    assert llama and any(r["fits"] for r in llama)
    for r in llama:  # a row that does not run: "—", as on every engine
        assert r["at_once"] == (re.search(r"--parallel (\d+)", r["command"]).group(1) if r["ttft"] != "—" else "—"), r
    vllm = next(r for r in rows["rows"] if r["command"].startswith("vllm serve") and r["at_once"] != "—")
    assert re.fullmatch(r"[\d,]+", vllm["at_once"]), vllm  # whole requests of the row's context


def test_the_summary_says_the_layout_each_engines_rows_run():
    """On 2 × RTX 3090 the rows run on several engines: llama.cpp's with its layer split (pipeline parallel),
    the others' tensor parallel; the summary names each layout with the engines whose rows run it."""
    r = what_runs_on("rtx-3090", 2, CATALOG)
    view = homelab_view(r, CATALOG)
    rows = {row.model: row for row in view.rows}
    laid_out = [m for m in r.models if m.fits and m.ttft_s is not None and m.note]
    assert {m.engine for m in laid_out} >= {"llamacpp", "vllm"} or {m.engine for m in laid_out} >= {"llamacpp", "trtllm"}
    parts = view.summary.split("; ")
    for m in laid_out:
        name = CATALOG.engine(m.engine).name
        assert any(m.note in part and name in part for part in parts), (m.model, m.note)
        if m.engine == "llamacpp":
            assert "--split-mode layer" in rows[m.model].command and "pipeline parallel 2" in m.note


def test_a_row_that_does_not_run_serves_no_requests_at_once_on_any_engine():
    view = homelab_view(what_runs_on("rtx-4090", 1, CATALOG, engine="llamacpp", quantizations=["q4_k_m"]))
    idle = [r for r in view.rows if r.ttft == "—"]
    assert any(r.model == "llama-3.3-70b" for r in idle)  # needs 2 GPUs; its offload wants the host RAM stated
    assert {r.at_once for r in idle} == {"—"}  # not the one --parallel slot its offload command opens
    assert all(r.at_once != "—" for r in view.rows if r.verdict == "runs")
