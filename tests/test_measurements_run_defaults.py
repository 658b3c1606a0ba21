"""A run's unstated engine settings are its own release's defaults: one launch gets one answer whether its defaults
are written out or not, and perf's pooling and the measured profiles compare launches the same way."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.measurements.records import RunProvenance, read_runs
from inferplan.memory.fit import plan_memory
from inferplan.performance.launch_match import settings_differ
from inferplan.performance.local_runs import as_profiles
from inferplan.performance.serving import estimate

DATA = Path(__file__).parent / "data" / "measurements"
GIVEN = RunProvenance(model="llama-3.1-8b", gpu="h100", engine="vllm", engine_version="0.6.4", measured_by="lab")
D = Deployment(model="llama-3.1-8b", gpu="h100", engine="vllm")  # the default release
W = Workload(input_len=1024, output_len=256, concurrency=16)


def run(catalog, name="vllm_bench_serve_c8.json", id_=1, **stated):
    (r,) = read_runs(catalog, [(name, (DATA / name).read_bytes())], GIVEN.model_copy(update=stated))
    return r.model_copy(update={"id": id_})


def defaults_at(catalog, release):
    s = plan_memory(D.model_copy(update={"engine_version": release}), catalog).settings
    return {"gpu_memory_utilization": round(s.memory_fraction, 6), "max_num_seqs": s.max_num_seqs,
            "max_num_batched_tokens": s.max_num_batched_tokens}


def test_a_run_that_states_nothing_ran_its_own_releases_defaults(catalog):
    old, new = defaults_at(catalog, "0.6.4"), defaults_at(catalog, None)
    assert old != new  # the premise: 0.6.4 ran other defaults than the default release
    differ = settings_differ(catalog, D, run(catalog))
    assert differ == {f: (old[f], new[f]) for f in old if old[f] != new[f]}


def test_one_launch_gets_one_answer_whether_its_defaults_are_written_out_or_not(catalog):
    unstated = (run(catalog), run(catalog, "vllm_bench_serve_c32.json", 2))
    written = tuple(r.model_copy(update=defaults_at(catalog, "0.6.4")) for r in unstated)
    a, b = (estimate(D, W, catalog, user_runs=runs) for runs in (unstated, written))
    assert a.bound != "measured" and "nearly matching" in a.assumptions[-1]
    assert a.output_tokens_per_s_per_user == pytest.approx(b.output_tokens_per_s_per_user, rel=1e-12)
    assert a.assumptions[-1] == b.assumptions[-1]
    at_its_release = D.model_copy(update={"engine_version": "0.6.4"})
    exact = [estimate(at_its_release, W, catalog, user_runs=runs) for runs in (unstated, written)]
    assert all(e.bound == "measured" for e in exact)  # interpolated across c8 and c32: the same launch
    assert exact[0].tpot_s == pytest.approx(exact[1].tpot_s, rel=1e-12)


def test_runs_of_one_launch_pool_whether_their_defaults_are_written_out_or_not(catalog):
    unstated = run(catalog)
    written = run(catalog, "vllm_bench_serve_c32.json", 2).model_copy(update=defaults_at(catalog, "0.6.4"))
    est = estimate(D.model_copy(update={"engine_version": "0.6.4"}), W, catalog, user_runs=(unstated, written))
    assert est.bound == "measured" and "concurrency 8–32" in est.assumptions[-1]
    profiles = as_profiles((unstated, written), catalog)
    assert [p.id for p in profiles] == ["user-run-2-1024-256"]
    assert {p.concurrency for p in profiles[0].points} == {8, 32}
