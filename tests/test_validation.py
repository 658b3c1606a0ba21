"""Regression guards on `inferplan validate --memory` and on the calibration constants."""

import pytest

from inferplan.validation.calibrate import fit_driver_reserve, fit_runtime_overhead, fit_vllm_activation
from inferplan.validation.memory import validate_memory


def test_memory_validation_stays_within_the_issue_targets(catalog):
    v = validate_memory(catalog)
    assert len(v.checks) == len(catalog.memory_points) >= 10  # nothing dropped
    assert v.median_abs_kv_error < 0.03  # target: KV cache within 3% median
    assert v.median_abs_weights_error < 0.02  # target: weights within 2% median
    assert v.fit_agreement >= 0.9


def test_known_misses_are_still_scored(catalog):
    by_id = {c.id: c for c in validate_memory(catalog).checks}
    # documented misses (docs/memory.md): they stay in the score
    assert abs(by_id["a09-mistral-small-3.2-24b-h100"].kv_error) > 0.05
    assert by_id["a03-gptoss-120b-h100"].predicted_fits is False


def test_shipped_constants_equal_the_fit(catalog):
    act = fit_vllm_activation(catalog)
    assert catalog.constant("vllm-sampler-bytes-per-seq-vocab") == pytest.approx(act.sampler_bytes_per_seq_vocab, abs=0.01)
    assert catalog.constant("vllm-forward-bytes-per-token-hidden") == pytest.approx(act.forward_bytes_per_token_hidden, abs=0.01)
    single, multi = fit_runtime_overhead(catalog)
    assert catalog.constant("runtime-overhead-bytes-single-gpu") == pytest.approx(single, rel=1e-6)
    assert catalog.constant("runtime-overhead-bytes-multi-gpu") == pytest.approx(multi, rel=1e-6)
    reserve, _ = fit_driver_reserve(catalog)
    assert catalog.constant("driver-reserved-fraction") == pytest.approx(reserve, abs=1e-5)
    fitted = set(catalog.calibration.records["vllm-sampler-bytes-per-seq-vocab"].fitted_on)
    assert fitted == set(act.points)


# Scored single-stream (concurrency 1) decode points worse than 30 %, each explained in docs/speed.md. A new miss
# fails the test; a fixed one can leave the list.
KNOWN_DECODE_MISSES = {
    # MLX: an M2 Ultra MoE figure through a server path limited per token (its Q6_K and Q4_K_M GGUF runs
    # decode at the same speed); an M4 end-to-end figure
    "s-amoe-mlx-m2ultra-qwen3-30b-a3b-mlx4-tg-mlxstudio": "M2 Ultra, MLX MoE through a server limited per token",
    "s-amoe-mlx-m2ultra-qwen3-4b-mlx4-tg-mlxstudio": "M2 Ultra, MLX through the same server as the MoE run above",
    # the smallest models are fixed costs only: MLX's fitted per-layer cost is too little for a 0.6B model's
    # 28 layers; vLLM's Qwen3-0.6B on A100 sits on the line, moving across it with each refit
    "s-small-mlx-m3ultra-qwen3-0.6b-mlx4-tg-rmlx633": "M3 Ultra, MLX Qwen3-0.6B (fixed costs only)",
    "s-small-vllm-a100-qwen3-0.6b-bf16-tg-tt340": "A100, vLLM Qwen3-0.6B (fixed costs only; on the line: +30.5 %)",
    # SGLang batch 1: thin gpt-oss layers on B200 run faster than the family's per-layer overhead
    # allows (three sources agree on ~2.4 ms; on 4x B200 on the line: -31.1 %); sources
    # disagree with each other (Qwen3-235B BF16 on 8x B200: 6.70 ms in one sweep, 10.12 ms in the cookbook)
    "s-sglang-b200x8-gptoss120b-mxfp4-tpot-c1-gist": "SGLang gpt-oss-120b on 8x B200",
    "s-hb-sglang-b200x8-gpt-oss-120b-mxfp4-tpot-cookbook": "SGLang gpt-oss-120b on 8x B200",
    "s-sglang-4xb200-gptoss120b-mxfp4-bs1-tg": "SGLang gpt-oss-120b on 4x B200 (on the line: -31.1 %)",
    "s-sglang-b200x8-qwen3-235b-bf16-tpot-c1-gist": "SGLang Qwen3-235B on 8x B200 (cookbook: 10.12 ms, within 1 %)",
    # the SGLang cookbook on 8x B200 (Jan 2026 builds), -33 %: these builds run DeepSeek-R1's 61 layers
    # faster than the family's per-layer cost (fitted with the H20 points' compute padded to tiles) allows;
    # Qwen3-Next-80B from the same cookbook sits just within (-27 %)
    "s-hb-sglang-b200x8-deepseek-r1-fp8-block-tpot-1k1k-cookbook": "SGLang (Jan 2026) DeepSeek-R1 FP8 on 8x B200 (-33 %)",
    "s-hb-sglang-b200x8-deepseek-r1-fp8-block-tpot-1k8k-cookbook": "the same at 1k/8k (-33 %)",
    "s-hb-sglang-b200x8-deepseek-r1-fp8-block-tpot-8k1k-cookbook": "the same at 8k/1k (-33 %)",
    # SGLang 0.4.6 on H20: its GEMMs pad to 32-row tiles, which on the H20's 148 TFLOP/s of BF16 cost about as
    # long as reading the weights (BF16 8B +20 %, FP8 within 4 %, Qwen3-32B BF16 +27 %). Its AWQ runs are slower than Marlin's 8-row blocks allow (-18 and -8 % at the 32-row tile, +24 %
    # at 16 rows): that build called vLLM's Marlin from before its 8-row kernels, whose mma.sync instructions
    # reach less of Hopper's peak than the WGMMA rate the model prices
    "s-hb-sglang-h20x1-qwen3-32b-int4-awq-tg-qwendoc": "SGLang 0.4.6 on H20, AWQ through Marlin (+55 %)",
    "s-hb-sglang-h20x1-qwen3-8b-int4-awq-tg-qwendoc": "SGLang 0.4.6 on H20, AWQ through Marlin (+39 %)",
    # vLLM builds drift: a 2026 build runs Qwen3-30B-A3B faster than the family; older builds
    # (Marlin MoE AWQ, 0.7.2 on H20) slower
    "s-rb-vllm-h200x1-qwen3-30b-a3b-bf16-tpot-c1-4k4k-emmy": "vLLM 0.17 Qwen3-30B-A3B BF16 on H200",
    "s-hb-vllm-b200x1-gpt-oss-20b-mxfp4-tg-gpuconc": "vLLM (Aug 2025) gpt-oss-20b on one B200, slower than on H200 (+30.4 %)",
    "s-bx-vllm-h100x8-deepseek-r1-int4-awq-tpot-tt356": "vLLM (Jul 2025) DeepSeek-R1 AWQ (Marlin MoE) on 8x H100",
    "s-bx-vllm-h100x8-deepseek-r1-int4-awq-tpot-4k-tt356": "vLLM (Jul 2025) DeepSeek-R1 AWQ (Marlin MoE) on 8x H100",
    "s-h20b-vllm-h20x16-deepseek-r1-fp8-block-tg-chitu": "vLLM 0.7.2 DeepSeek-R1 on 2x 8 H20 (layout assumed)",
    # TensorRT-LLM: a 2026 build on GB200 runs Qwen3-235B at ~43 us per layer where the family
    # pays 34 us per layer + 58 per MoE layer (DeepSeek's MoE+MLA layers set that); DeepSeek-R1 with
    # MTP on 8x H200 faster than the family's draft cost allows (without MTP on 8x B200: within 30 %)
    "s-rb-trtllm-gb200x4-qwen3-235b-a22b-nvfp4-tps-c1-1k1k-pr11612": "TensorRT-LLM (2026) Qwen3-235B NVFP4 on 4x GB200",
    "s-rb-trtllm-gb200x4-qwen3-235b-a22b-nvfp4-tps-c1-1k8k-pr11612": "TensorRT-LLM (2026) Qwen3-235B NVFP4 on 4x GB200, 1k/8k",
    "s-rb-trtllm-gb200x4-qwen3-235b-a22b-nvfp4-tps-c1-8k1k-pr11612": "TensorRT-LLM (2026) Qwen3-235B NVFP4 on 4x GB200, 8k/1k",
    "s-tl-h200x8-deepseek-r1-fp8-block-tps-mtp3-bp": "TensorRT-LLM DeepSeek-R1 with MTP on 8x H200",
    # seed 001's 2026 lines on SGLang (held out; SGLang cookbook cells, speculative
    # decoding with pinned acceptance): cells that contradict their own cookbook, and costs not modelled
    "s-ssl-sglang-b200x8-glm-5.2-nvfp4-tpot-c1-mtp5": "GLM-5.2 NVFP4 on 8x B200: 1.85 ms where the FP8 cell is 3.22 ms; build and acceptance unstated",
    "s-ssl-sglang-b300x8-glm-5.3-bf16-tpot-c1-mtp5": "GLM-5.3 BF16 on 8x B300, faster than the same build's FP8 cell",
    "s-ssl-sglang-mi350xx8-kimi-k3-mxfp4-tpot-c1": "Kimi-K3 on 8x MI350X, ROCm build on its original TP8 recipe (-40 %)",
    "s-ssl-sglang-mi355xx8-glm-5.2-fp8-tpot-c1": "GLM-5.2 on 8x MI355X, SGLang 0.5.13 ROCm with DSA through tilelang (-32 %)",
    "s-ssl-sglang-gb300x4-deepseek-v4-flash-mixed-fp4-fp8-tpot-c1-mtp3": "DeepSeek-V4-Flash on 4x GB300, slower than on B200 (-42 -> -32 % with mHC)",
    # DeepSeek-V4 outside the cookbook (held out): SGLang is slower than the model in every source
    # (LMSYS's Day-0 runs, InferenceX's no-MTP decode worker): V4's layers launch more small kernels than the
    # fitted per-layer cost knows; the hyper-connection seams are priced (9 us each, the fused seam; these
    # builds ran the ~13 us unfused one), the compressor and indexer kernels are not; a patched vLLM fork on
    # RTX PRO 6000 is faster than vLLM's constants
    "s-sv4-sglang-b200x8-deepseek-v4-pro-mixed-fp4-fp8-decode-c1-eagle3-ctx4k": "SGLang Day-0 V4-Pro on 8x B200, 5.0 ms/token at accept length 2.5",
    "s-sv4-sglang-b200x8-deepseek-v4-pro-mixed-fp4-fp8-decode-c1-eagle3-ctx900k": "the same at 900K context",
    # pricing DeepSeek-V4's hyper-connection seams (hc-seam-s, read from kernel timings) moves every single-
    # stream SGLang V4 point 8-23 points towards measured, and the patched vLLM fork's, already faster than
    # vLLM's constants, 5-8 points further out
    "s-sv4-vllm-rtxpro6000x4-deepseek-v4-flash-mixed-fp4-fp8-decode-c1-mtp2": "patched vLLM fork, V4-Flash on 4x RTX PRO 6000 with MTP 2 (-34 %; -28 % without the seams)",
}

# Scored per-user decode points at concurrency 2 or more worse than 30 % (kind decode-concurrent),
# each explained in docs/speed.md; the same equality rule.
KNOWN_CONCURRENT_DECODE_MISSES = {
    "s-go-vllm-h100x8-gpt-oss-120b-tpot-c4-1k1k-inferencex": "vLLM (Mar 2026) gpt-oss-120b on 8x H100",
    "s-go-vllm-h100x8-gpt-oss-120b-tpot-c8-1k1k-inferencex": "vLLM (Mar 2026) gpt-oss-120b on 8x H100",
    "s-go-vllm-h100x8-gpt-oss-120b-tpot-c4-8k1k-inferencex": "vLLM (Mar 2026) gpt-oss-120b on 8x H100, 8k/1k",
    "s-go-vllm-b200x1-gpt-oss-20b-tg-c8-gpuconc": "vLLM (Aug 2025) gpt-oss-20b on B200, slower than on H200",
    "s-go-vllm-b200x1-gpt-oss-20b-tg-c4-gpuconc": "the same at 4 (+32 %: the family's fixed costs are lower than this build's)",
    "s-rb-trtllm-gb200x4-qwen3-235b-a22b-nvfp4-tps-c2-1k1k-pr11612": "TensorRT-LLM (2026) Qwen3-235B NVFP4 on 4x GB200",
    "s-rb-trtllm-gb200x4-qwen3-235b-a22b-nvfp4-tps-c4-1k1k-pr11612": "TensorRT-LLM (2026) Qwen3-235B NVFP4 on 4x GB200",
    "s-rb-trtllm-gb200x4-qwen3-235b-a22b-nvfp4-tps-c8-1k1k-pr11612": "TensorRT-LLM (2026) Qwen3-235B NVFP4 on 4x GB200",
}


def test_speed_validation_medians_hold(catalog):
    from inferplan.validation.speed import validate_speed

    v = validate_speed(catalog)
    scored = [c for c in v.checks if c.error is not None and c.scored]
    assert len(v.checks) >= 598 and len(scored) >= 583  # every point reported; unplannable ones say why
    assert v.medians["decode/all"] < 0.10  # target: single-stream decode within 10% median
    # ... and no scored single-stream point worse than 30%, except the misses docs/speed.md explains
    beyond = {c.id for c in scored if c.kind == "decode" and abs(c.error) > 0.30}
    # equal, not a subset: a miss that is fixed must leave the list (and docs/speed.md) too
    assert beyond == set(KNOWN_DECODE_MISSES), (beyond - set(KNOWN_DECODE_MISSES), set(KNOWN_DECODE_MISSES) - beyond)
    # held out: 10.20 %, just past the 10 % target on this split (docs/speed.md, Validation): guarded against
    # getting worse, not claimed as met
    assert v.medians["decode/holdout"] < 0.1030
    concurrent = {c.id for c in scored if c.kind == "decode-concurrent" and abs(c.error) > 0.30}
    assert concurrent == set(KNOWN_CONCURRENT_DECODE_MISSES), (concurrent - set(KNOWN_CONCURRENT_DECODE_MISSES),
                                                                set(KNOWN_CONCURRENT_DECODE_MISSES) - concurrent)
    assert v.medians["decode-concurrent/all"] < 0.15
    assert v.medians["throughput/all"] < 0.15  # target: serving throughput within 15% median
    assert v.medians["throughput/holdout"] < 0.15
    assert v.medians["profile/holdout"] < 0.20
    for c in v.checks:
        if c.error is None:
            assert c.note  # why it could not be predicted


def test_speed_constants_stay_inside_their_bounds_where_data_is_thin(catalog):
    # the pull towards the pooled fit keeps a constant its family's points do not pin down (SGLang's
    # prefill efficiency, fitted at the 0.95 bound before) at a physical value
    from inferplan.validation.calibrate_speed import BOUNDS, CONSTANT_IDS, FAMILIES

    lo, hi = BOUNDS["compute_efficiency"]
    for family in FAMILIES:
        value = catalog.constant(CONSTANT_IDS["compute_efficiency"].format(family))
        assert lo < value < 0.9 * hi, family


@pytest.mark.refit
def test_shipped_speed_constants_equal_the_fit(catalog):
    """The full refit (minutes of CPU): run with ``pytest --refit``. Between refits the fit stamp
    (tests/test_fit_stamp.py) shows the shipped constants are still the fit of the present inputs."""
    from inferplan.validation.calibrate_speed import CONSTANT_IDS, fit_speed

    for family in fit_speed(catalog):
        for name, value in family.params.items():
            shipped = catalog.constant(CONSTANT_IDS[name].format(family.family))
            assert shipped == pytest.approx(value, rel=1e-4, abs=1e-9), (family.family, name)


def test_eager_points_are_predicted_and_shown_but_not_scored_or_fitted(catalog):
    """Runs with CUDA graphs off are outside what the planner models: printed with their error and
    the reason, left out of the medians and of calibration (docs/speed.md lists them)."""
    from inferplan.validation.calibrate_speed import prepare
    from inferplan.validation.speed import NOT_MODELLED, validate_speed

    eager = {p.id for p in catalog.speed_points if not p.cuda_graphs}
    assert eager
    v = validate_speed(catalog)
    for c in v.checks:
        if c.id in eager:
            assert not c.scored and c.predicted is not None and c.note == NOT_MODELLED
    fitted, _ = prepare(catalog, None)
    assert not eager & {p.id for p in fitted}


def test_stated_engine_settings_reach_the_scenario(catalog):
    from inferplan.validation.speed import scenario

    capped = next(p for p in catalog.speed_points if p.max_num_seqs)
    d, _ = scenario(capped)
    assert d.max_num_seqs == capped.max_num_seqs
    primed = next(p for p in catalog.speed_points if p.prefix_cache_hit_rate == 1.0)
    _, w = scenario(primed)
    assert w.prefix_cache_hit_rate == 1.0


def test_speed_checks_carry_their_engine_build_and_decode_is_summarised_by_build_year(catalog):
    from inferplan.validation.speed import validate_speed

    v = validate_speed(catalog)
    checks = {c.id: c for c in v.checks}
    # Qwen's speed-benchmark runs used SGLang 0.4.6.post1, released in April 2025
    assert checks["s-hb-sglang-h20x1-qwen3-8b-bf16-tg-qwendoc"].engine_build.startswith("2025-")
    decode = [c for c in v.checks if c.kind == "decode" and c.scored and c.error is not None]
    assert sum(y.points for y in v.decode_by_build_year) == len(decode)
    assert sum(y.beyond_30_percent for y in v.decode_by_build_year) == len(KNOWN_DECODE_MISSES)
    years = [y.year for y in v.decode_by_build_year]
    assert years == sorted(years) and {"2023", "2026"} <= set(years)
    dated = sum(c.engine_build is not None for c in decode)
    assert dated >= 0.85 * len(decode)  # most points name a build the catalogue dates


def test_shipped_track_record_equals_a_fresh_validation(catalog):
    """speed_accuracy.yaml is generated from `validate --speed`: after a refit or a new point it must
    be regenerated (`python -m inferplan.validation.accuracy --write`), or estimates quote a stale record."""
    from inferplan.validation.speed import validate_speed

    fresh = {r.id: r for r in validate_speed(catalog).by_family}
    assert set(fresh) == set(catalog.speed_accuracy.records)
    for key, record in fresh.items():
        assert catalog.speed_accuracy.records[key] == record, key
    # every family with scored single-stream decode points has a record, and the counts add up
    decode = [c for c in validate_speed(catalog).checks if c.kind == "decode" and c.scored and c.error is not None]
    assert sum(r.points for r in fresh.values() if r.kind == "decode") >= len(decode)


@pytest.mark.slow
def test_cross_validation_scores_a_fold_only_with_fits_that_never_saw_it(catalog):
    """Change one point's measured value tenfold: the errors of the other points of its fold must
    not move (their fit never saw it), those of the other folds must (it trains theirs)."""
    import dataclasses

    from inferplan.validation.calibrate_speed import prepare
    from inferplan.validation.crossval import cross_validate, held_out_errors, source_folds

    points = [p for p in prepare(catalog, "fit")[0] if p.family == "mlx"][:12]
    fold = source_folds(catalog, points)
    assert len(set(fold.values())) >= 2
    before = held_out_errors(catalog, points, prior_weight=0.05)
    moved = next(p for p in points if sum(fold[q.id] == fold[p.id] for q in points) > 1)
    after = held_out_errors(catalog, [dataclasses.replace(p, measured=p.measured * 10) if p is moved else p
                                      for p in points], prior_weight=0.05)
    same_fold = [p.id for p in points if p is not moved and fold[p.id] == fold[moved.id]]
    other_folds = [p.id for p in points if fold[p.id] != fold[moved.id]]
    assert same_fold and other_folds
    assert all(after[i] == pytest.approx(before[i], abs=1e-12) for i in same_fold)
    assert any(abs(after[i] - before[i]) > 1e-3 for i in other_folds)
    cv = cross_validate(catalog, prior_weight=0.05, points=points)
    assert cv.points == 12 == sum(k.points for k in cv.by_kind)
    assert 0 <= cv.median_abs_error < 1 and cv.beyond_30_percent <= cv.points


def test_cross_validation_folds_keep_a_source_together(catalog):
    """A fold must hold whole sources, or its error would not say how a new source fares."""
    from inferplan.validation.calibrate_speed import prepare
    from inferplan.validation.crossval import FOLDS, source_folds

    points, _ = prepare(catalog, "fit")
    fold = source_folds(catalog, points)
    by_source: dict[str, set[int]] = {}
    sources = {p.id: {p.measured.source} for p in catalog.speed_points}
    for prof in catalog.serving_profiles:  # a sweep's points, and sweeps that share a source (one lab's table)
        for pt in prof.points:
            sources[f"{prof.id}@{pt.concurrency}"] = {q.source for q in (pt.output_tokens_per_s_per_user,
                                                                         pt.output_tokens_per_s_per_gpu, pt.ttft_s) if q}
    for p in points:
        for source in sources[p.id.split(":")[0]]:
            by_source.setdefault(source, set()).add(fold[p.id])
    assert all(len(f) == 1 for f in by_source.values())
    assert set(fold.values()) == set(range(FOLDS))


def test_the_speed_fit_writes_numbers_that_yaml_reads_back_as_numbers():
    # a refit on the tile grid wrote "value: 1e-05", which PyYAML reads as a string
    import yaml

    from inferplan.validation.calibrate_speed import yaml_number

    for value in (1e-05, 2e-06, 7.55101e-05, 0.92, 38.168, 0.0, 1e-05 * 3, 123456789.0):
        assert yaml.safe_load(f"v: {yaml_number(value)}")["v"] == pytest.approx(float(f"{value:.6g}"))
    assert yaml_number(1e-05) == "1.0e-05" and yaml_number(0.92) == "0.92"
