"""Two files of one import that measured the same load level of the same deployment on the same day are refused
naming both (the plans would keep one figure and drop the other unread); other days and other levels import
together."""

import json
from pathlib import Path

import pytest

from inferplan.errors import InvalidScenarioError
from inferplan.measurements.records import RunProvenance, read_runs

DATA = Path(__file__).parent / "data" / "measurements"
C8 = json.loads((DATA / "vllm_bench_serve_c8.json").read_text())
GIVEN = RunProvenance(gpu="h100", model="llama-3.1-8b")


def _file(**changed) -> bytes:
    return json.dumps({**C8, **changed}).encode()


def test_a_rerun_of_one_level_in_a_second_file_is_refused_naming_both(catalog):
    with pytest.raises(InvalidScenarioError) as info:
        read_runs(catalog, [("first.json", _file()), ("rerun.json", _file(mean_ttft_ms=52.0))], GIVEN)
    message = str(info.value)
    assert message.startswith("rerun.json: point 1 measures the load level of first.json point 1 again (concurrency 8")
    assert info.value.field == "file" and "leave one file out" in info.value.allowed


def test_other_days_and_levels_import_together(catalog):
    files = [("a.json", _file()), ("b.json", _file(mean_ttft_ms=52.0, date="20261102-101500")),
             ("c.json", (DATA / "vllm_bench_serve_c32.json").read_bytes())]
    assert len(read_runs(catalog, files, GIVEN)) == 3


def test_one_run_given_twice_is_left_to_the_stores_same_run_refusal(catalog):
    assert len(read_runs(catalog, [("a.json", _file()), ("a.json", _file())], GIVEN)) == 2


def test_a_files_second_point_at_one_level_is_told_to_take_an_import_of_its_own():
    # a file of its own in the same import is refused too (above): the refusal sends the rerun to an import of its own
    from inferplan.measurements.formats import parse

    with pytest.raises(InvalidScenarioError) as info:
        parse("concurrency,input_tokens,output_tokens,ttft_ms\n1,10,10,5\n1,10,10,6\n", "csv")
    assert "in a file and an import of its own" in str(info.value)


def test_speculative_runs_of_other_measured_acceptance_import_together(catalog):
    # the plans keep them as two profiles (drafts and acceptance rate apart); one acceptance twice is one level twice
    spec = json.loads((DATA / "vllm_bench_serve_spec_c8.json").read_text())
    qwen = RunProvenance(gpu="h100", model="qwen3-8b", speculative_tokens=3, speculative_method="eagle3")

    def file(length: float, ttft_ms: float = 48.3) -> bytes:
        return json.dumps({**spec, "spec_decode_acceptance_length": length, "mean_ttft_ms": ttft_ms}).encode()

    runs = read_runs(catalog, [("a.json", file(2.6)), ("b.json", file(2.2))], qwen)
    assert len({r.acceptance_rate for r in runs}) == 2
    with pytest.raises(InvalidScenarioError):
        read_runs(catalog, [("a.json", file(2.6)), ("b.json", file(2.6, ttft_ms=52.0))], qwen)


def test_two_files_at_one_concurrency_and_other_request_rates_both_reach_the_profile(catalog):
    # the import tells the levels apart by request rate, and so does the plans' pooling: neither point dropped
    from inferplan.performance.local_runs import as_profiles

    files = [("r4.json", _file(request_rate=4.0, mean_tpot_ms=5.0)), ("r8.json", _file(request_rate=8.0, mean_tpot_ms=7.0))]
    runs = tuple(r.model_copy(update={"id": i}) for i, r in enumerate(read_runs(catalog, files, GIVEN), 1))
    (profile,) = as_profiles(runs, catalog)
    assert sorted(round(1 / p.output_tokens_per_s_per_user.value, 4) for p in profile.points) == [0.005, 0.007]
