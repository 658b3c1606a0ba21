import pytest

from inferplan.catalog.loader import load_catalog
from inferplan.catalog.memory_rules import memory_rule
from inferplan.errors import AmbiguousNameError, InvalidScenarioError, UnknownHardwareError, UnknownModelError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.units import GiB


def run(**kwargs):
    return fit(Deployment(**kwargs))


def test_mistral_small_kv_tokens_follow_blocks_of_128():
    # llm-d: 28.2 GiB of KV at 160 KiB/token and block 128 -> 1444 blocks -> 184,832 tokens
    r = run(model="mistral-small-3.2-24b", gpu="h100-sxm", gpu_memory_utilization=0.95,
            max_model_len=16000, max_num_batched_tokens=8192)
    assert r.kv_cache_bytes_per_token == 160 * 1024
    tokens_per_gib = GiB / r.kv_cache_bytes_per_token
    assert tokens_per_gib == pytest.approx(6553.6)
    assert r.max_concurrency == pytest.approx(r.kv_cache_bytes_per_gpu / (16000 * 160 * 1024))


def test_llama_70b_fp8_needs_two_h100s():
    # at vLLM 0.33's 0.92 (0.34's measured sizing leaves enough for 16,000 tokens on one)
    one = run(model="llama-3.3-70b", gpu="H100", quantization="fp8", max_model_len=16000, engine_version="0.33.0")
    assert not one.fits
    assert one.shortfall_bytes > 0
    assert one.smallest_fit.gpus == 2 and one.smallest_fit.tensor_parallel_size == 2
    two = run(model="llama-3.3-70b", gpu="H100", quantization="fp8", max_model_len=16000, tensor_parallel_size=2,
              engine_version="0.33.0")
    assert two.fits and two.shortfall_bytes == 0


def test_seed_70b_fp16_does_not_fit_h100_but_fits_b200_with_100gb_left():
    # seed 003: "B200 fits the full 70B model in FP16 on one chip with 100GB+ left over for KV cache"
    h100 = run(model="llama-3.3-70b", gpu="H100", quantization="bf16", max_model_len=8192)
    # at the default fraction: a fraction of 1.0 leaves the current release no room for its start-up allocations
    b200 = run(model="llama-3.3-70b", gpu="b200", quantization="bf16", max_model_len=8192)
    assert not h100.fits
    assert b200.fits
    assert b200.gpu_memory_bytes - b200.weights_bytes_per_gpu > 30e9  # what the seed rounds up
    assert b200.weights_bytes == pytest.approx(141e9, rel=0.01)  # "about 140GB of VRAM at FP16"


def test_tp_never_raises_per_gpu_weights():
    per_gpu = [run(model="qwen3-32b", gpu="H100", tensor_parallel_size=tp).weights_bytes_per_gpu for tp in (1, 2, 4, 8)]
    assert per_gpu == sorted(per_gpu, reverse=True)


def test_expert_parallel_shards_experts_across_data_parallel_ranks():
    base = dict(model="qwen3-235b-a22b", gpu="H200", quantization="fp8", tensor_parallel_size=2, gpus=8)
    plain = run(**base)
    ep = run(**base, enable_expert_parallel=True)
    assert plain.parallel.data_parallel_size == 4
    assert ep.weights_bytes_per_gpu < plain.weights_bytes_per_gpu / 2


def test_largest_context_at_a_concurrency():
    r = run(model="qwen3-32b", gpu="H100", concurrency=4)
    assert r.largest_context_tokens > 0
    assert 4 * r.largest_context_tokens * r.kv_cache_bytes_per_token <= r.kv_cache_bytes_per_gpu * 1.001


def test_system_sets_gpu_and_count():
    r = run(model="deepseek-v3", system="hgx-h200", tensor_parallel_size=8, max_model_len=32768)
    assert r.parallel.gpus == 8 and r.accelerator == "h200-sxm"
    assert r.fits


def test_hopper_nvfp4_is_flagged_as_fallback():
    r = run(model="llama-3.3-70b", gpu="H100", quantization="nvfp4")
    assert any("fallback" in a for a in r.assumptions)


def test_kv_proxy_models_say_so(sketch_catalog):
    r = fit(Deployment(model="sketch-proxy-moe", system="hgx-b200", tensor_parallel_size=8), sketch_catalog)
    assert any("kv_proxy" in a for a in r.assumptions)
    # a model on a borrowed layout is not held to the borrowed layer count (61 for DeepSeek-V3)
    deep = fit(Deployment(model="sketch-proxy-moe", gpu="l4", gpus=256, tensor_parallel_size=4, pipeline_parallel_size=64),
               sketch_catalog)
    assert deep.parallel.pipeline_parallel_size == 64


def test_unpublished_architecture_needs_a_stated_kv_size(sketch_catalog):
    with pytest.raises(InvalidScenarioError) as exc:
        fit(Deployment(model="sketch-unpublished", system="hgx-b200", tensor_parallel_size=8), sketch_catalog)
    assert exc.value.field == "kv_bytes_per_token"
    r = fit(Deployment(model="sketch-unpublished", system="hgx-b200", tensor_parallel_size=8, kv_bytes_per_token=100_000),
            sketch_catalog)
    assert r.kv_cache_bytes_per_token == 100_000
    assert any("stated by the user" in a for a in r.assumptions)
    assert any("assumed vocab" in a for a in r.assumptions)


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_every_engine_gives_a_budget(engine):
    r = run(model="llama-3.1-8b", gpu="H100", engine=engine, max_model_len=8192)
    assert r.fits and r.kv_cache_bytes_per_gpu > 40 * GiB


@pytest.mark.parametrize("engine", ["llamacpp", "mlx"])
def test_a_context_sized_cache_is_what_the_context_needs(engine):
    # llama.cpp allocates n_ctx (padded to 256), mlx-lm grows in 256-token steps: 8192 × 128 KiB
    r = run(model="llama-3.1-8b", gpu="H100", engine=engine, max_model_len=8192)
    assert r.fits and r.kv_cache_allocated_bytes_per_gpu == 8192 * 128 * 1024
    assert r.kv_cache_bytes_per_gpu > 40 * GiB  # the room a longer context could take
    assert run(model="llama-3.1-8b", gpu="H100", engine=engine, max_model_len=8000).kv_cache_allocated_bytes_per_gpu \
        == 8192 * 128 * 1024
    assert run(model="llama-3.1-8b", gpu="H100", engine="vllm").kv_cache_allocated_bytes_per_gpu is None


def test_sglang_reserves_less_for_kv_than_full_memory():
    v = run(model="llama-3.1-8b", gpu="H100", engine="sglang")
    # the fraction is of the memory free at start-up: the device total less the CUDA context; SGLang 0.5.23's
    # 0.830 on an H100 (13,440 MiB reserved and 464 MiB for its prefill CUDA graphs) is of nvidia-smi's
    # 81,559 MiB, the 79.18 GiB CUDA reports give 0.829
    free_at_start = v.gpu_memory_bytes - 0.61 * GiB
    assert v.kv_cache_bytes_per_gpu == pytest.approx(free_at_start * 0.829 - v.weights_bytes_per_gpu, rel=1e-4)


@pytest.mark.parametrize(
    ("kwargs", "error", "field"),
    [
        (dict(model="no-such-model", gpu="H100"), UnknownModelError, "model"),
        (dict(model="llama-3.1-8b", gpu="no-such-gpu"), UnknownHardwareError, "gpu"),
        (dict(model="llama-3.1-8b", gpu="RTX"), AmbiguousNameError, "gpu"),
        (dict(model="llama-3.1-8b", gpu="H100", tensor_parallel_size=2, gpus=3), InvalidScenarioError, "data_parallel_size"),
        (dict(model="llama-3.1-8b", gpu="H100", tensor_parallel_size=4, gpus=2), InvalidScenarioError, "gpus"),
        (dict(model="llama-3.1-8b", system="hgx-h100", gpus=12), InvalidScenarioError, "gpus"),
        # vLLM splits the 64 attention heads evenly over the tensor-parallel ranks: 24 does not divide them
        (dict(model="llama-3.1-70b", gpu="H100", tensor_parallel_size=24, gpus=24), InvalidScenarioError, "tensor_parallel_size"),
        (dict(model="llama-3.1-8b", gpu="H100", quantization="q9_z"), Exception, "quantization"),
        (dict(model="llama-3.1-8b", gpu="H100", kv_cache_dtype="fp3"), Exception, "kv_cache_dtype"),
        (dict(model="llama-3.1-8b", gpu="H100", engine="ollama"), Exception, "engine"),
        (dict(model="qwen3-8b", gpu="H100", quantization="mlx-4bit", engine="vllm"), InvalidScenarioError, "quantization"),
        (dict(model="llama-3.1-8b", gpu="RTX 4090", quantization="fp8", engine="llamacpp"), InvalidScenarioError, "quantization"),
        # no --quantization: DeepSeek-V3.2's only build, native FP8, is not something llama.cpp loads
        (dict(model="deepseek-v3.2", gpu="M3 Ultra", engine="llamacpp"), InvalidScenarioError, "quantization"),
    ],
)
def test_bad_input_names_the_field(kwargs, error, field):
    with pytest.raises(error) as exc:
        run(**kwargs)
    assert exc.value.field == field


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(gpu_memory_utilization=0.0),
        dict(gpu_memory_utilization=1.5),
        dict(max_model_len=0),
        dict(max_model_len=10**12),
        dict(tensor_parallel_size=-1),
        dict(gpus=0),
    ],
)
def test_out_of_range_deployment_is_rejected(kwargs):
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        Deployment(model="llama-3.1-8b", gpu="H100", **kwargs)


def test_ambiguous_gpu_lists_candidates():
    with pytest.raises(AmbiguousNameError) as exc:
        run(model="llama-3.1-8b", gpu="RTX")
    assert "rtx-4090" in exc.value.allowed


def test_engine_format_error_lists_what_the_engine_loads():
    with pytest.raises(InvalidScenarioError) as exc:
        run(model="qwen3-8b", gpu="H100", quantization="gguf-q4_k_m", engine="sglang")
    assert "gguf-q4_k_m" in str(exc.value) and "fp8" in exc.value.allowed and "gguf" not in exc.value.allowed


@pytest.mark.parametrize(("engine", "quant"), [("llama.cpp", "q4_k_m"), ("SGLang", "fp8"), ("TensorRT-LLM", "fp8")])
def test_engine_names_resolve_before_the_format_check(engine, quant):
    plan = run(model="llama-3.1-8b", gpu="RTX 4090" if engine == "llama.cpp" else "H100", engine=engine, quantization=quant)
    assert plan.fits


def test_an_engine_takes_only_the_kv_cache_types_it_runs():
    with pytest.raises(InvalidScenarioError) as exc:
        run(model="llama-3.1-8b", gpu="H100", kv_cache_dtype="int2-kivi")  # KIVI is research code
    # the domain field, which each shell says its own way (the CLI's --kv-bytes-per-token)
    assert exc.value.field == "kv_cache_dtype" and "with kv_bytes_per_token" in str(exc.value) and "--" not in str(exc.value)
    with pytest.raises(InvalidScenarioError) as exc:
        run(model="llama-3.1-8b", gpu="rtx-4090", engine="llamacpp", quantization="gguf-q4_k_m", kv_cache_dtype="int8")
    assert "q8_0" in str(exc.value) and "q4_0" in exc.value.allowed
    with pytest.raises(InvalidScenarioError):
        run(model="llama-3.1-8b", gpu="rtx-4090", engine="llamacpp", quantization="gguf-q4_k_m", kv_cache_dtype="fp8")
    assert run(model="llama-3.1-8b", gpu="rtx-4090", engine="llamacpp", quantization="gguf-q4_k_m",
               kv_cache_dtype="q8_0").kv_cache_dtype == "q8_0"
    assert run(model="llama-3.1-8b", gpu="H100", kv_cache_dtype="fp8").kv_cache_dtype == "fp8"


def test_a_context_past_the_models_and_more_stages_than_layers_are_refused():
    with pytest.raises(InvalidScenarioError) as exc:
        run(model="llama-3.1-8b", gpu="H100", gpus=8, tensor_parallel_size=8, max_model_len=1_000_000)
    assert exc.value.field == "max_model_len" and exc.value.allowed == "at most 131,072 tokens"
    assert run(model="llama-3.1-8b", gpu="H100", max_model_len=131_072).max_model_len == 131_072
    # llama.cpp runs past the trained context and says so
    long = run(model="llama-2-7b", gpu="H100", engine="llamacpp", quantization="gguf-q4_k_m", max_model_len=8192)
    assert long.fits and any("trained context of 4,096" in a for a in long.assumptions)
    # TensorRT-LLM lowers max_seq_len to the model's and serves at that length
    capped = run(model="llama-2-7b", gpu="H100", engine="trtllm", max_model_len=8192)
    assert capped.max_model_len == 4096 and any("serves at most 4,096" in a for a in capped.assumptions)
    assert run(model="qwen3.8-2.4t-a95b", gpu="l4", gpus=256, tensor_parallel_size=4,
               pipeline_parallel_size=64).parallel.pipeline_parallel_size == 64
    with pytest.raises(InvalidScenarioError) as exc:  # its own config has 92 layers
        run(model="qwen3.8-2.4t-a95b", gpu="l4", gpus=372, tensor_parallel_size=4, pipeline_parallel_size=93)
    assert exc.value.field == "pipeline_parallel_size"
    with pytest.raises(InvalidScenarioError) as exc:
        run(model="llama-3.1-8b", gpu="H100", gpus=33, pipeline_parallel_size=33)
    assert exc.value.field == "pipeline_parallel_size" and exc.value.allowed == "1 to 32"


@pytest.mark.parametrize(("engine", "gpu", "quantization"), [("vllm", "H100", "bf16"), ("sglang", "H100", "bf16"),
                                                             ("trtllm", "H100", "bf16"), ("llamacpp", "H100", "gguf-q4_k_m"),
                                                             ("mlx", "apple-m4-max", "mlx-4bit")])
def test_a_context_past_the_models_is_treated_as_the_engine_does(catalog, engine, gpu, quantization):
    """engines.yaml context_beyond_model, with its source, decides: refuse, cap, or run with a note."""
    behaviour = catalog.engine(engine).context_beyond_model
    assert catalog.engine(engine).context_beyond_model_source in catalog.sources
    d = Deployment(model="llama-2-7b", gpu=gpu, engine=engine, quantization=quantization, max_model_len=8192)
    if behaviour == "refuse":
        with pytest.raises(InvalidScenarioError) as exc:
            fit(d)
        assert exc.value.field == "max_model_len"
        return
    r = fit(d)
    assert r.max_model_len == (4096 if behaviour == "cap" else 8192)
    assert any(("serves at most" if behaviour == "cap" else "runs it") in a for a in r.assumptions)


def test_cards_without_a_context_take_their_configs():
    with pytest.raises(InvalidScenarioError) as exc:  # Qwen3.5's config: 262,144 positions
        run(model="qwen3.5-397b-a17b", system="hgx-b200", max_model_len=5_000_000)
    assert exc.value.field == "max_model_len" and "262,144" in exc.value.allowed


def test_deepseek_v4_runs_an_fp8_cache(catalog):
    assert run(model="deepseek-v4-flash", gpu="B200", tensor_parallel_size=4).kv_cache_dtype == "fp8"
    with pytest.raises(InvalidScenarioError) as exc:
        run(model="deepseek-v4-flash", gpu="B200", tensor_parallel_size=4, kv_cache_dtype="bf16")
    assert exc.value.field == "kv_cache_dtype" and "fp8" in exc.value.allowed


def test_deepseek_v4_takes_the_engines_own_cache_where_it_stores_no_fp8():
    # MLX on an Apple GPU stores no FP8 KV cache: the V4 default is the model's own dtype, not a refusal
    r = run(model="deepseek-v4-flash", gpu="M3 Ultra 512GB", engine="mlx", quantization="mlx-4bit")
    assert r.kv_cache_dtype == "bf16"


def test_pipeline_stages_split_layers_as_vllm_does():
    from inferplan.memory.stages import stage_bounds, stage_layer_counts

    # vLLM get_pp_indices: the extra layers go to the stages before the last, from the second-to-last back
    assert stage_layer_counts(61, 2) == (31, 30)
    assert stage_layer_counts(80, 3) == (27, 27, 26)
    assert stage_layer_counts(10, 4) == (2, 3, 3, 2)
    assert stage_layer_counts(80, 8) == (10,) * 8
    assert stage_bounds(61, 2) == ((0, 31), (31, 61))


def test_under_pipeline_parallelism_the_fullest_stage_holds_the_embeddings_too():
    # Llama 3.3 70B NVFP4 at PP 8: every stage 10 layers; the first adds the BF16 embedding table,
    # the last the BF16 lm_head (untied, same size), so the fullest GPU holds 3/4 of a table more
    # than an even eighth of the whole
    r = run(model="llama-3.3-70b", gpu="rtx-pro-6000-blackwell", gpus=8, pipeline_parallel_size=8,
            quantization="nvfp4", engine="trtllm", max_model_len=4096)
    table = 128256 * 8192 * 2
    assert r.weights_bytes_per_gpu == pytest.approx(r.weights_bytes / 8 + 0.75 * table, rel=1e-6)
    assert any("pipeline stages hold 10/10/10/10/10/10/10/10 layers" in a for a in r.assumptions)
    # the KV room is what the fullest GPU leaves, so it shrinks by the same bytes
    even = run(model="llama-3.3-70b", gpu="rtx-pro-6000-blackwell", gpus=8, pipeline_parallel_size=1,
               tensor_parallel_size=8, quantization="nvfp4", engine="trtllm", max_model_len=4096)
    assert r.kv_cache_bytes_per_gpu < even.kv_cache_bytes_per_gpu


@pytest.mark.parametrize("model,tied", [("llama-3.3-70b", False), ("qwen3-4b", True), ("deepseek-r1", False)])
def test_pipeline_stages_hold_the_whole_model_once_and_a_tied_table_twice(model, tied):
    from inferplan.catalog.loader import load_catalog
    from inferplan.memory.resolve import resolve_model
    from inferplan.memory.stages import stage_weights
    from inferplan.memory.weights import weight_bytes

    catalog = load_catalog()
    spec = resolve_model(catalog, model)
    w = weight_bytes(spec, catalog.quantization("bf16"))
    arch = spec.architecture
    assert w.head_is_embedding is tied
    one = stage_weights(w, tp=1, pp=1, expert_shards=1, moe_layers=arch.moe.moe_layers if arch.moe else (),
                        num_layers=arch.num_layers)
    assert one[0].bytes_per_gpu == pytest.approx(w.total_bytes)
    for pp in (2, 3, 4):
        stages = stage_weights(w, tp=2, pp=pp, expert_shards=2, moe_layers=arch.moe.moe_layers if arch.moe else (),
                               num_layers=arch.num_layers)
        held = 2 * sum(s.bytes_per_gpu for s in stages)  # two TP ranks per stage
        extra = w.embedding_bytes if tied else 0.0
        assert held == pytest.approx(w.total_bytes + extra + w.replicated_bytes, rel=1e-9)
        assert 2 * sum(s.expert_bytes_per_gpu for s in stages) == pytest.approx(w.expert_bytes, rel=1e-9)


@pytest.mark.parametrize("model,gpu,tp", [("gemma-3-27b", "h100-sxm", 1), ("deepseek-v4-flash", "b200", 4),
                                          ("llama-3.3-70b", "h100-sxm", 4)])
def test_kv_tokens_are_what_sequences_of_the_planned_length_hold(model, gpu, tp):
    # window layers and recurrent state cost a sequence the same at any length: counting them per
    # token had Gemma 3 27B on one H100 at 131,072 tokens hold 21,920 tokens while one whole
    # sequence (nearly) fits
    r = run(model=model, gpu=gpu, gpus=tp, tensor_parallel_size=tp, quantization="bf16" if tp < 4 else None,
            max_model_len=32768)
    block = memory_rule(load_catalog(), "vllm").block_tokens or 16  # the current release's default block
    assert r.max_concurrency >= 1
    assert abs(r.kv_cache_tokens - r.max_concurrency * r.max_model_len) <= block * max(r.max_concurrency, 1)
    if model == "llama-3.3-70b":  # no windows, no state: the per-token figure vLLM logs
        assert r.kv_cache_tokens == int(r.kv_cache_bytes_per_gpu // (block * r.kv_cache_bytes_per_token / tp)) * block



def test_kv_tokens_do_not_depend_on_a_length_that_ends_inside_a_block():
    # vLLM logs one figure whatever max_model_len is; a sequence's last block is held whole
    lengths = [run(model="llama-3.1-8b", gpu="h100-sxm", max_model_len=n).kv_cache_tokens for n in (100, 4096, 4100)]
    assert len(set(lengths)) == 1


def test_llamacpp_keeps_the_input_embeddings_in_host_memory():
    # llama.cpp's load_tensors keeps the input layer on the CPU: Llama 3.1 8B's 128,256 x 4,096 table
    # at Q4_0's 4.5 bits (281.8 MiB) is not on the GPU; a tied table still is, as the output layer
    lcpp = run(model="llama-3.1-8b", gpu="rtx-4090", engine="llamacpp", quantization="gguf-q4_0", max_model_len=4096)
    assert lcpp.weights_bytes - lcpp.weights_bytes_per_gpu == pytest.approx(128256 * 4096 * 4.5 / 8, rel=1e-3)
    assert any("keeps the token-embedding table" in a for a in lcpp.assumptions)
    tied = run(model="qwen3-4b", gpu="rtx-4090", engine="llamacpp", quantization="gguf-q4_k_m", max_model_len=4096)
    assert tied.weights_bytes_per_gpu == pytest.approx(tied.weights_bytes)
    vllm = run(model="llama-3.1-8b", gpu="rtx-4090", engine="vllm", quantization="bf16", max_model_len=4096)
    assert vllm.weights_bytes_per_gpu == pytest.approx(vllm.weights_bytes)


def test_under_pipeline_parallelism_each_stage_has_the_room_its_own_weights_leave():
    # DeepSeek-R1 at TP 8 x PP 2: the first stage has 31 layers (more KV per sequence), the second 30
    # MoE layers and the lm_head (more weights); vLLM gives every stage the same block count, the
    # smallest any stage affords, so the concurrency is the smaller of the two stages' own
    from inferplan.catalog.loader import load_catalog
    from inferplan.memory.engine_budget import engine_budget
    from inferplan.catalog.memory_rules import memory_rule
    from inferplan.memory.fit import plan_memory
    from inferplan.memory.moe_buffers import moe_profile_bytes

    catalog = load_catalog()
    mp = plan_memory(Deployment(model="deepseek-r1", gpu="h200-sxm", gpus=16, tensor_parallel_size=8,
                                pipeline_parallel_size=2, quantization="fp8-block", max_model_len=32768), catalog)
    r = mp.result
    # block FP8 experts on Hopper without expert parallelism keep the Triton modular kernel's workspaces
    caches = moe_profile_bytes(memory_rule(catalog, "vllm"), mp.spec.architecture, accel=catalog.accelerator("h200-sxm"),
                               tokens=mp.settings.max_num_batched_tokens, tp=8, release=mp.settings.release,
                               quant_id="fp8-block")
    assert caches.kept
    rooms = [engine_budget(catalog, catalog.engine("vllm"), total_bytes=r.gpu_memory_bytes, weights_bytes_per_gpu=st.bytes_per_gpu,
                           arch=mp.spec.architecture, settings=mp.settings, tp=8, gpus_in_instance=16,
                           accel=catalog.accelerator("h200-sxm"), moe_caches=caches).kv_bytes_per_gpu
             for st in mp.stage_weights]
    per_stage = [room / layout.sequence_bytes_per_gpu(32768, mp.settings.block_tokens)
                 for room, layout in zip(rooms, mp.layout.stages)]
    assert r.max_concurrency == pytest.approx(min(per_stage), rel=1e-9)
    assert r.kv_cache_bytes_per_gpu == pytest.approx(min(rooms), rel=1e-9)
    assert max(per_stage) > min(per_stage) > 0.99 * r.kv_cache_bytes_per_gpu / r.sequence_bytes_per_gpu


def test_sglang_gives_every_pipeline_stage_the_fullest_gpus_room():
    # SGLang reads the smallest free memory over all ranks: every stage's cache is sized by the
    # fullest GPU, and a sequence by the stage that needs most for it
    from inferplan.catalog.loader import load_catalog
    from inferplan.memory.engine_budget import engine_budget
    from inferplan.memory.fit import plan_memory

    kw = dict(model="deepseek-r1", gpu="h200-sxm", gpus=16, tensor_parallel_size=8, pipeline_parallel_size=2,
              quantization="fp8-block", max_model_len=32768)
    sglang = run(engine="sglang", **kw)
    assert sglang.max_concurrency == pytest.approx(sglang.kv_cache_bytes_per_gpu / sglang.sequence_bytes_per_gpu, rel=1e-9)
    catalog = load_catalog()
    mp = plan_memory(Deployment(engine="sglang", **kw), catalog)
    rooms = [engine_budget(catalog, catalog.engine("sglang"), total_bytes=sglang.gpu_memory_bytes,
                           weights_bytes_per_gpu=st.bytes_per_gpu, arch=mp.spec.architecture, settings=mp.settings,
                           tp=8, gpus_in_instance=16, accel=mp.accelerator).kv_bytes_per_gpu for st in mp.stage_weights]
    assert max(rooms) > min(rooms)
    assert sglang.kv_cache_bytes_per_gpu == pytest.approx(min(rooms), rel=1e-9)


def test_a_pipeline_shortfall_is_what_the_worst_off_stage_lacks():
    # Mistral Small 3.1 over three RTX 4090s at its full context: each stage against its own room
    from inferplan.catalog.loader import load_catalog
    from inferplan.memory.engine_budget import engine_budget
    from inferplan.memory.fit import plan_memory

    catalog = load_catalog()
    mp = plan_memory(Deployment(model="mistral-small-3.1-24b", gpu="rtx-4090", gpus=3, pipeline_parallel_size=3), catalog)
    r = mp.result
    assert not r.fits
    rooms = [engine_budget(catalog, catalog.engine("vllm"), total_bytes=r.gpu_memory_bytes, weights_bytes_per_gpu=st.bytes_per_gpu,
                           arch=mp.spec.architecture, settings=mp.settings, tp=1, gpus_in_instance=3).kv_bytes_per_gpu
             for st in mp.stage_weights]
    lack = [layout.sequence_bytes_per_gpu(r.max_model_len, mp.settings.block_tokens) - room
            for layout, room in zip(mp.layout.stages, rooms)]
    assert r.shortfall_bytes == pytest.approx(max(lack), rel=1e-9)


def test_llamacpp_on_unified_memory_keeps_the_table_in_the_same_pool():
    spark = run(model="llama-3.1-8b", gpu="gb10", engine="llamacpp", quantization="gguf-q4_0", max_model_len=4096)
    assert spark.weights_bytes_per_gpu == pytest.approx(spark.weights_bytes)


def test_a_config_without_a_context_length_asks_for_one(tmp_path):
    import json

    from inferplan.catalog.loader import DATA_DIR

    config = json.loads((DATA_DIR / "hf_configs" / "llama-3.1-8b.json").read_text())
    config.pop("max_position_embeddings")
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    with pytest.raises(InvalidScenarioError) as exc:
        run(model=str(path), gpu="H100")
    assert exc.value.field == "max_model_len"
    assert run(model=str(path), gpu="H100", max_model_len=4096).max_model_len == 4096


def test_a_sliding_window_model_states_its_kv_per_token_inside_and_beyond_the_window(catalog):
    """Gemma 4 31B: 50 sliding layers (1,024-token window) and 10 full ones — 880 KiB per token
    inside the window, 80 KiB beyond (its card); fit says both, so the token count adds up."""
    from typer.testing import CliRunner

    from inferplan.shells.cli import app

    r = fit(Deployment(model="gemma-4-31b", gpu="rtx-4090", quantization="int4-awq", max_model_len=16128), catalog)
    assert (r.kv_window_tokens, r.kv_cache_bytes_per_token / 1024, r.kv_cache_bytes_per_token_beyond_window / 1024) == (
        1024, pytest.approx(880), pytest.approx(80))
    dense = fit(Deployment(model="qwen3-8b", gpu="h100"), catalog)
    assert dense.kv_window_tokens is None and dense.kv_cache_bytes_per_token_beyond_window is None
    out = CliRunner().invoke(app, ["fit", "--model", "gemma-4-31b", "--gpu", "rtx-4090", "-q", "int4-awq",
                                   "--max-model-len", "16128"], env={"COLUMNS": "200"}).output
    assert "880.0 KiB per token within the 1,024-token sliding window, 80.0 KiB beyond it" in out


def test_a_deployment_is_planned_once_per_catalogue_and_never_across_catalogues(sketch_catalog):
    """A speed sweep re-plans one deployment at every batch size: the memo returns the same plan for
    an equal deployment of the same catalogue, and a fresh one for another catalogue."""
    from inferplan.catalog.loader import load_catalog
    from inferplan.memory.fit import plan_memory

    d = Deployment(model="llama-3.1-8b", gpu="H100", max_model_len=4096)
    first = plan_memory(d, load_catalog())
    assert plan_memory(Deployment(model="llama-3.1-8b", gpu="H100", max_model_len=4096), load_catalog()) is first
    other = plan_memory(d, sketch_catalog)
    assert other is not first and other.result == first.result
    assert plan_memory(d.model_copy(update={"max_model_len": 8192}), load_catalog()) is not first
    # equal fields, one stated: a stated TP 1 on two GPUs runs copies where the unstated one runs TP 2
    two, stated = Deployment(model="llama-3.1-8b", gpu="H100", gpus=2), Deployment(model="llama-3.1-8b", gpu="H100",
                                                                                      gpus=2, tensor_parallel_size=1)
    assert two == stated and plan_memory(two).result.parallel != plan_memory(stated).result.parallel
