"""The requests an engine release runs at once when no max_num_seqs is stated (catalog/running_defaults.py,
applied by memory/settings.py): SGLang's min(pool tokens // 2, its request table) from the pool each rank
sized, mlx-lm's batch of 32 (one request at a time before 0.28.4, and with a draft model)."""

import pytest
from pydantic import ValidationError

from inferplan.catalog.loader import load_catalog
from inferplan.catalog.running_defaults import RequestTable, RunningDefault
from inferplan.deploy import launch_command
from inferplan.errors import UnsupportedSettingError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.fit import fit
from inferplan.performance.context import ServingContext


def _sglang(**more) -> Deployment:
    return Deployment(**{"model": "llama-3.1-8b", "gpu": "rtx-4090", "engine": "sglang", "max_model_len": 2048, **more})


def test_sglang_runs_its_request_table_sized_from_the_pool():
    r = fit(_sglang(gpu_memory_utilization=0.7, concurrency=3000))
    # 9,588 pool tokens at a 2,048-token context: int(9,588 / 2,048 x 512) = 2,397 table rows, within 2,048-4,096,
    # below 9,588 // 2 = 4,794: 2,397 run, not the 256 of engines.yaml's generic fallback
    assert r.kv_cache_tokens == 9588 and r.running_cap == 2397 and r.queued_sequences == 603
    assert r.running_cap_flag == "--max-running-requests"
    assert any("min(9,588 pool tokens // 2, a request table of 2,397 requests" in a for a in r.assumptions)


def test_sglang_runs_half_the_pool_tokens_below_the_tables_floor():
    r = fit(_sglang(gpu_memory_utilization=0.67))
    # 3,926 pool tokens: the table takes its floor of 2,048 rows (3,926 / 2,048 x 512 = 981), half the pool is 1,963
    assert r.kv_cache_tokens == 3926 and r.running_cap == 1963


def test_sglang_each_dp_attention_rank_runs_its_own_pools_requests():
    d = Deployment(model="qwen3-30b-a3b", gpu="h100-sxm", gpus=2, engine="sglang", data_parallel_size=2,
                   enable_expert_parallel=True, max_model_len=32768, concurrency=9000)
    r = fit(d)
    # each rank's 385,177 tokens at 32,768: int(385,177 / 32,768 x 512) = 6,018, capped at 4,096 a rank
    assert r.kv_cache_tokens == 385177 and r.running_cap == 4096 and r.queued_sequences == 9000 - 2 * 4096


def test_a_stated_max_running_requests_and_a_drafts_48_win():
    assert fit(_sglang(gpu_memory_utilization=0.7, max_num_seqs=100)).running_cap == 100
    assert fit(_sglang(gpu_memory_utilization=0.7, speculative_method="ngram", speculative_tokens=3)).running_cap == 48


def test_perf_runs_sglangs_pool_default():
    d = _sglang(gpu="h100-sxm", max_model_len=65536)
    ctx = ServingContext(load_catalog(), d, Workload(input_len=100, output_len=100))
    # 411,050 pool tokens at 65,536: a table of 3,211 rows; the cache holds fewer requests of 200 tokens, all run
    assert fit(d).running_cap == 3211 and ctx.max_running == ctx.kv_limit > 256


def _mlx(**more) -> Deployment:
    return Deployment(model="llama-3.1-8b", gpu="apple-m2-ultra", engine="mlx", max_model_len=8192, concurrency=100, **more)


def test_mlx_decodes_32_requests_together():
    r = fit(_mlx())
    assert r.running_cap == 32 and r.running_cap_flag == "--decode-concurrency" and r.queued_sequences == 68
    assert fit(_mlx(max_num_seqs=64)).running_cap == 64


def test_mlx_before_its_batch_generator_serves_one_request_at_a_time():
    assert fit(_mlx(engine_version="0.28.3")).running_cap == 1
    assert fit(_mlx(engine_version="0.20.4")).running_cap == 1
    assert fit(_mlx(engine_version="0.28.4")).running_cap == 32


def test_mlx_names_no_decode_concurrency_flag_before_0_30_6():
    # the BatchGenerator's 32 (and 0.28.3's one at a time) run with no flag to set them before 0.30.6
    for release, running in (("0.28.3", 1), ("0.29.1", 32), ("0.30.5", 32)):
        r = fit(_mlx(engine_version=release))
        assert (r.running_cap, r.running_cap_flag) == (running, "max_num_seqs"), release
        assert not any("--decode-concurrency" in a for a in r.assumptions), release
    assert fit(_mlx(engine_version="0.30.6")).running_cap_flag == "--decode-concurrency"


def test_a_stated_max_num_seqs_on_mlx_before_0_30_6_is_refused_by_fit_and_deploy():
    old = _mlx(engine_version="0.29.1", max_num_seqs=64)
    for refuse in (fit, launch_command):
        with pytest.raises(UnsupportedSettingError) as err:
            refuse(old)
        assert err.value.field == "max_num_seqs" and "0.30.6 or later" in err.value.allowed
    assert "--decode-concurrency" in launch_command(old.model_copy(update={"engine_version": "0.30.6"})).argv


def test_mlx_with_a_draft_model_serves_one_request_at_a_time():
    d = Deployment(model="qwen3-8b", gpu="apple-m2-ultra", engine="mlx", max_model_len=8192, concurrency=100)
    assert fit(d).running_cap == 32
    drafted = d.model_copy(update={"speculative_method": "draft_model", "draft_checkpoint": "qwen3-0.6b",
                                   "speculative_tokens": 3})
    assert fit(drafted).running_cap == 1


def test_a_running_default_is_fixed_or_from_the_pool():
    table = RequestTable(requests_per_pool_context=512, requests_floor=2048, requests_cap=4096)
    with pytest.raises(ValidationError, match="fixed running_requests, or pool_tokens_per_request"):
        RunningDefault(first_release="1.0", running_requests=32, pool_tokens_per_request=2, request_table=table,
                       sources=("s",))
    with pytest.raises(ValidationError, match="fixed running_requests, or pool_tokens_per_request"):
        RunningDefault(first_release="1.0", pool_tokens_per_request=2, sources=("s",))
    pooled = RunningDefault(first_release="1.0", pool_tokens_per_request=2, request_table=table, sources=("s",))
    assert pooled.pool_requests(100_000, 8192) == 4096 and pooled.pool_requests(1, 8192) == 1


def test_sglang_0_4_runs_its_request_table_with_one_row_more():
    # 0.3.6-0.4.6 size the same table from the pool and keep max_num_reqs + 1 rows: 2,397 + 1 run
    for release in ("0.4.6", "0.4.0", "0.3.6"):
        r = fit(_sglang(gpu_memory_utilization=0.7, concurrency=3000, engine_version=release))
        assert r.kv_cache_tokens == 9588 and r.running_cap == 2398, release
    # as do 0.3.3-0.3.5; 0.3.1 and 0.3.2 run as many requests as the table's 2,397 rows; 0.2.0-0.3.0 one fewer
    for release, running in (("0.3.5", 2398), ("0.3.3", 2398), ("0.3.2", 2397), ("0.3.1", 2397), ("0.3.0", 2396),
                             ("0.2.7", 2396), ("0.2.6", 2396), ("0.2.0", 2396)):
        r = fit(_sglang(gpu_memory_utilization=0.7, concurrency=3000, engine_version=release))
        assert r.kv_cache_tokens == 9588 and r.running_cap == running, release


def test_sglang_0_2_sizes_its_request_table_without_an_upper_bound_to_0_2_6():
    def running(release: str, pool: int) -> int:
        r = fit(Deployment(model="llama-3.1-8b", gpu="h100-sxm", engine="sglang", max_model_len=8192,
                           engine_version=release, concurrency=30000))
        assert r.kv_cache_tokens == pool, release
        return r.running_cap
    # at TP 1 the pool is 450,312 tokens to 0.2.6 (mem_fraction_static 0.89) and 443,875 from 0.2.7 (0.88). At
    # 8,192: int(450,312 / 8,192 x 512) = 28,144 rows, below half the pool: to 0.2.6 no cap, 28,143 run;
    # 0.2.7-0.3.0 cap the table at 5,120 rows (5,119 run); 0.3.1 at 4,096; 0.3.3 4,096 + 1
    assert [running(v, p) for v, p in (("0.2.0", 450312), ("0.2.6", 450312), ("0.2.7", 443875), ("0.3.0", 443875),
                                       ("0.3.1", 443875), ("0.3.3", 443875))] == [28143, 28143, 5119, 5119, 4096, 4097]
    assert any("a request table of 28,143 requests = max(450,312 / 8,192 x 512, 2048) - 1" in a
               for a in fit(Deployment(model="llama-3.1-8b", gpu="h100-sxm", engine="sglang", max_model_len=8192,
                                       engine_version="0.2.0")).assumptions)
