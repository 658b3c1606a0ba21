"""SGLang under pipeline parallelism divides its running cap over the micro-batches (engines.yaml pp_batch_limits:
divided): each admits max(max_running_requests // pp, 1), so the instance runs pp x that, at most the one request
table's rows, fit answers the largest context at that many and perf batches no more (memory/running_cap.py
running_sequences)."""

import pytest

from inferplan.catalog.flags_schema import flags_for
from inferplan.catalog.loader import load_catalog
from inferplan.errors import UnsupportedSettingError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.fit import fit
from inferplan.performance.context import ServingContext


def _pp(**more) -> Deployment:
    return Deployment(**{"model": "llama-3.1-8b", "gpu": "h100-sxm", "engine": "sglang", "gpus": 2,
                         "pipeline_parallel_size": 2, **more})


def test_a_stated_cap_is_divided_over_the_pipeline_micro_batches():
    r = fit(_pp(max_num_seqs=101, concurrency=101))
    # --max-running-requests 101 over 2 micro-batches: 101 // 2 = 50 each, 100 at once, 1 queues; the pool's
    # 953,643 tokens over the 100 running: 9,536 each (over 101 it would be 9,442)
    assert r.kv_cache_tokens == 953643 and r.running_cap == 100 and r.queued_sequences == 1
    assert r.largest_context_tokens == 9536
    assert "--max-running-requests 101 divided over 2 pipeline micro-batches, 50 each" in r.concurrency_note


def test_a_cap_below_the_stages_runs_no_more_than_its_request_table():
    # 1 // 4 = 0, raised to 1 a micro-batch, but every micro-batch admits against the free rows of the one request
    # table sized at the stated cap (0.5.23 scheduler.py get_num_allocatable_reqs min(pp_budget, row_budget)):
    # four stages run 1 request for a stated 1, 3 for a stated 3
    r = fit(_pp(gpus=4, pipeline_parallel_size=4, max_num_seqs=1, concurrency=10))
    assert r.running_cap == 1 and r.queued_sequences == 9
    three = fit(_pp(gpus=4, pipeline_parallel_size=4, max_num_seqs=3, concurrency=10))
    assert three.running_cap == 3 and three.queued_sequences == 7
    assert ("--max-running-requests 3 divided over 4 pipeline micro-batches, 1 each, 3 at once in the rows of the "
            "one request table they share" in three.concurrency_note)
    d = _pp(gpus=4, pipeline_parallel_size=4, max_num_seqs=3)
    assert ServingContext(load_catalog(), d, Workload(input_len=100, output_len=100)).max_running == 3


def test_the_pool_default_is_divided_over_the_pipeline_micro_batches():
    r = fit(_pp(max_model_len=127000, concurrency=5000))
    # 949,781 pool tokens at 127,000: a table of int(949,781 / 127,000 x 512) = 3,829 requests, below half the
    # pool; 3,829 // 2 = 1,914 a micro-batch, 3,828 at once, 1,172 queue; each running sequence's share 248 tokens
    assert r.kv_cache_tokens == 949781 and r.running_cap == 3828 and r.queued_sequences == 1172
    assert r.largest_context_tokens == 949781 // 3828 == 248
    assert any("3,828 requests at once per instance (2 pipeline micro-batches of 1,914: its 3,829-request cap "
               "divided)" in a for a in r.assumptions)
    four = fit(_pp(gpus=4, pipeline_parallel_size=4, concurrency=5000))
    # 1,998,338 pool tokens at 131,072: the table's 4,096 cap, 1,024 a micro-batch, all 4,096 run
    assert four.kv_cache_tokens == 1998338 and four.running_cap == 4096 and four.queued_sequences == 904


def test_perf_runs_the_divided_cap():
    d = _pp(max_num_seqs=101)
    ctx = ServingContext(load_catalog(), d, Workload(input_len=100, output_len=100))
    assert ctx.max_running == fit(d).running_cap == 100


def test_one_stage_runs_the_whole_cap():
    assert fit(_pp(gpus=1, pipeline_parallel_size=1, max_num_seqs=101)).running_cap == 101


def test_a_pipeline_before_0_4_6_post2_is_refused_naming_the_release():
    # 0.4.6.post1's ServerArgs has no pp_size (engine_flags.yaml: --pp-size from 0.4.6.post2); one stage needs no flag
    for release in ("0.4.6", "0.4.6.post1"):
        with pytest.raises(UnsupportedSettingError) as e:
            fit(_pp(engine_version=release))
        assert e.value.field == "pipeline_parallel_size" and f"engine_version {release}" in str(e.value)
        assert e.value.allowed == "1, or engine_version 0.4.6.post2 or later"
    assert fit(_pp(engine_version="0.4.6", pipeline_parallel_size=1)).parallel.pipeline_parallel_size == 1


def test_0_4_6_post2_divides_its_cap_over_the_micro_batches():
    # 0.4.6.post2 scheduler.py lines 306-309: max(max_running_requests // pp_size, 1) a micro-batch
    r = fit(_pp(engine_version="0.4.6.post2", max_num_seqs=101, concurrency=101))
    assert r.running_cap == 100 and r.queued_sequences == 1


def test_a_layout_left_to_the_plan_takes_no_pipeline_before_0_4_6_post2(catalog):
    flags = flags_for(catalog, "sglang")
    assert not flags.launches_split(1, 2, "0.4.6.post1") and flags.launches_split(1, 2, "0.4.6.post2")
    assert not flags.launches_split(1, 2, "0.4.6") and flags.launches_split(1, 2, "0.4.7")
    assert flags.launches_split(2, 1, "0.4.6") and flags.launches_split(1, 2, None)
