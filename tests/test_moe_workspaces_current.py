"""vLLM's fused-MoE buffers from 0.17 to 0.34 (engine_memory_rules.yaml activation.moe_buffers,
memory/moe_buffers.py): INT4 experts leave fused_marlin_moe for the modular kernel one checkpoint format
at a time, and the modular kernel's workspaces, kept by the workspace manager after the profile, add to the
activation peak instead of meeting the sampler pass in the larger of the two."""

import pytest
from test_moe_profile_buffers import _catalog_without_moe_buffers

from inferplan.catalog.loader import load_catalog
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.memory.moe_buffers import moe_profile_bytes
from inferplan.memory.resolve import resolve_model

CATALOG = load_catalog()
RULE = CATALOG.memory_rules.records["vllm-extensible-kv-cache"]
QWEN_MOE = resolve_model(CATALOG, "qwen3-30b-a3b").architecture
A100, RTX4090, H100 = (CATALOG.accelerators.records[g] for g in ("a100-80gb", "rtx-4090", "h100-sxm"))

# Qwen3-30B-A3B: hidden 2048, 8 of 128 experts of 768 per token; 8,192 tokens, TP 1, bf16 workspaces:
# workspace13 8192 x 8 x max(768, 2048) (the 8192 x 2048 output inside it) + workspace2 8192 x 8 x max(1536, 2048)
MODULAR_8192 = 2 * (8192 * 8 * 2048 + 8192 * 8 * 2048)  # 536,870,912 B, 0.50 GiB
# fused_marlin_moe: 8192 x 8 x max(1536, 2048) + 8192 x 8 x 768, plus a new 8192 x 2048 output
FUSED_8192 = 2 * (8192 * 8 * (2048 + 768) + 8192 * 2048)  # 402,653,184 B


def _buffers(release, quant, accel=A100, **kw):
    return moe_profile_bytes(RULE, QWEN_MOE, accel=accel, tokens=8192, tp=1, release=release, quant_id=quant, **kw)


def test_int4_experts_keep_marlins_modular_workspaces_at_0_34():
    assert (QWEN_MOE.hidden_size, QWEN_MOE.moe.experts_per_token, QWEN_MOE.moe.expert_intermediate_size) == (2048, 8, 768)
    for accel in (A100, RTX4090):
        for quant in ("int4-awq", "int4-gptq", "int4-w4a16"):
            size, note, kept = _buffers("0.34.0", quant, accel)
            assert (size, kept) == (MODULAR_8192, True)
            assert note.startswith("Marlin (modular) MoE workspaces kept after the profile, for 8,192 tokens at once")


def test_the_workspaces_take_the_gpus_share_of_the_intermediate_size():
    # TP 2: I = 384, so max(384, 2048) + max(768, 2048): the hidden size binds both
    size, *_ = moe_profile_bytes(RULE, QWEN_MOE, accel=A100, tokens=8192, tp=2, release="0.34.0", quant_id="int4-gptq")
    assert size == MODULAR_8192


def test_block_fp8_on_hopper_runs_triton_without_expert_parallelism_and_marlin_on_ampere():
    size, note, kept = _buffers("0.34.0", "fp8-block", H100)
    assert (size, kept) == (MODULAR_8192, True) and note.startswith("Triton (modular)")
    assert _buffers("0.34.0", "fp8-block", H100, expert_parallel=True) == (0.0, None, False)  # FlashInfer CUTLASS
    assert _buffers("0.34.0", "fp8", A100)[2] and _buffers("0.34.0", "fp8", A100)[1].startswith("Marlin (modular)")
    assert _buffers("0.34.0", "fp8", H100) == (0.0, None, False)  # per-tensor FP8 on Hopper: CUTLASS, not described


def test_int4_experts_leave_fused_marlin_moe_one_checkpoint_format_at_a_time():
    fused, modular = (FUSED_8192, False), (MODULAR_8192, True)
    expected = {"0.19.1": (fused, fused, fused), "0.20.0": (fused, modular, fused),
                "0.22.0": (modular, modular, fused), "0.24.0": (modular, modular, modular)}
    for release, kinds in expected.items():
        got = tuple(_buffers(release, q)[::2] for q in ("int4-awq", "int4-gptq", "int4-w4a16"))
        assert got == kinds, release


def test_hoppers_int4_experts_leave_marlin_for_humming_at_0_32():
    assert _buffers("0.31.0", "int4-awq", H100)[0] == MODULAR_8192
    # Humming's indexed GEMM: 8192 x max(2048, 8 x 768, 2048) + 8192 x 8 x max(2048, 2 x 768) bf16 elements
    for quant in ("int4-awq", "int4-gptq", "int4-w4a16"):
        size, note, kept = _buffers("0.32.0", quant, H100)
        assert (size, kept) == (2 * (8192 * 6144 + 8192 * 8 * 2048), True) and note.startswith("Humming (modular)")
    # its grouped GEMM under expert parallelism: the first workspace holds 8192 x top-8 x 2048
    size, *_ = _buffers("0.34.0", "int4-awq", H100, expert_parallel=True)
    assert size == 2 * (8192 * 8 * 2048 + 8192 * 8 * 2048)


def test_0_16_keeps_its_unchunked_fused_marlin_caches():
    assert _buffers("0.16.0", "int4-awq")[::2] == (FUSED_8192, False)
    assert _buffers("0.16.0", "bf16") == (0.0, None, False)  # the modular kernel's workspaces are not read there


def test_the_default_plan_adds_the_kept_workspaces_to_the_sampler_pass(tmp_path):
    d = Deployment(model="qwen3-30b-a3b", gpu="a100-80gb", quantization="int4-awq", engine_version="0.34.0",
                   max_num_batched_tokens=8192)
    wired, unwired = fit(d, CATALOG), fit(d, _catalog_without_moe_buffers(tmp_path))
    assert wired.activation_bytes_per_gpu - unwired.activation_bytes_per_gpu == pytest.approx(MODULAR_8192)
    assert wired.kv_cache_bytes_per_gpu < unwired.kv_cache_bytes_per_gpu
    assert any("Marlin (modular) MoE workspaces kept after the profile" in a and "held through the sampler pass" in a
               for a in wired.assumptions)


def test_a_modular_workspace_entry_cannot_claim_an_output_copy_or_a_chunk():
    from pydantic import ValidationError

    from inferplan.catalog.moe_profile import MoeKernelBuffers
    for extra in ({"output_copy": True}, {"output_copy": False, "chunk_tokens": 16384}):
        with pytest.raises(ValidationError, match="modular_workspaces"):
            MoeKernelBuffers(kernel="Marlin", quantizations=("int4-awq",), shapes="modular_workspaces", sources=("x",),
                             **extra)


def test_data_parallel_ranks_tokens_are_all_gathered_into_the_kept_workspaces():
    # allgather_reducescatter, the default dispatch: each GPU's experts get both DP ranks' 8,192 tokens
    assert _buffers("0.34.0", "int4-awq", expert_parallel=True, data_parallel=2)[0] == 2 * MODULAR_8192
    assert _buffers("0.34.0", "int4-awq", data_parallel=2)[0] == 2 * MODULAR_8192  # I/2 = 384: the hidden size binds
    assert _buffers("0.19.1", "int4-awq", data_parallel=2)[0] == FUSED_8192  # no gather described before 0.20
    # Nemotron 3 Super (I 2688, latent K 1024, top-22) at DP 2 without EP: the experts' TP group spans both
    # ranks, so I binds at its share 2688 / 2 = 1344, not the whole 2688 a TP-1 GPU would hold
    nemotron = resolve_model(CATALOG, "nemotron-3-super").architecture
    size, note, _ = moe_profile_bytes(RULE, nemotron, accel=A100, tokens=8192, tp=1, release="0.34.0",
                                      quant_id="int4-awq", data_parallel=2)
    assert size == 2 * 8192 * 22 * (1344 + 2 * 1344) * 2 and "max(1344, 1024) + max(2 × 1344, 1024)" in note
    d = Deployment(model="qwen3-30b-a3b", gpu="a100-80gb", quantization="int4-awq", engine_version="0.34.0",
                   max_num_batched_tokens=8192, gpus=2, data_parallel_size=2, enable_expert_parallel=True)
    assert any("(2 DP ranks × 8,192 tokens, all-gathered)" in a and "= 1.00 GiB" in a for a in fit(d, CATALOG).assumptions)


def test_group_128_awq_and_gptq_experts_run_marlin_on_blackwell():
    # FlashInfer's MXINT4 kernel takes symmetric group-32 INT4 on compute capability 10.x only; 0.22's WNA16
    # oracle lists Marlin alone: AWQ/GPTQ (group 128) keep Marlin's workspaces on an RTX 5090 and a B200
    for accel in (CATALOG.accelerators.records["rtx-5090"], CATALOG.accelerators.records["b200"]):
        for release in ("0.22.0", "0.24.0", "0.34.0"):
            for quant in ("int4-awq", "int4-gptq"):
                size, note, kept = _buffers(release, quant, accel)
                assert (size, kept) == (MODULAR_8192, True) and note.startswith("Marlin (modular)"), (release, quant)
        assert _buffers("0.34.0", "int4-w4a16", accel) == (0.0, None, False)  # group 32 possible: not described
