"""The modular MoE kernel's workspaces are sized by the experts' input width K and their activation
(memory/moe_buffers.py, memory/moe_layout.py modular_workspace): a LatentMoE model's experts take the latent
width, not the hidden size, and Triton's workspace2 holds N = I gate/up rows for a plain activation (Nemotron 3's
ReLU²), while Marlin sizes it by 2N whatever the activation (vLLM 0.34.0 TritonExperts/MarlinExperts)."""

from inferplan.catalog.loader import load_catalog
from inferplan.memory.moe_buffers import moe_profile_bytes
from inferplan.memory.resolve import resolve_model

CATALOG = load_catalog()
RULE = CATALOG.memory_rules.records["vllm-extensible-kv-cache"]
H100, A100 = CATALOG.accelerators.records["h100-sxm"], CATALOG.accelerators.records["a100-80gb"]
NEMOTRON = resolve_model(CATALOG, "nemotron-3-super").architecture
KIMI_K3 = resolve_model(CATALOG, "kimi-k3").architecture


def test_a_latent_non_gated_models_triton_workspaces_take_the_latent_width_and_i_rows():
    moe = NEMOTRON.moe
    assert (moe.latent_size, moe.experts_per_token, moe.expert_intermediate_size // 8, NEMOTRON.mlp_projections) == \
        (1024, 22, 336, 2)
    size, note, kept = moe_profile_bytes(RULE, NEMOTRON, accel=H100, tokens=8192, tp=8, release="0.34.0", quant_id="bf16")
    assert kept and size == 8192 * 22 * (1024 + 1024) * 2  # 0.69 GiB, not 8192 x 22 x (hidden + hidden) x 2
    assert "max(336, 1024) + max(336, 1024)" in note


def test_marlin_keeps_two_n_rows_for_a_plain_activation_too():
    size, note, _ = moe_profile_bytes(RULE, NEMOTRON, accel=A100, tokens=8192, tp=1, release="0.34.0",
                                      quant_id="int4-awq")
    assert size == 8192 * 22 * (2688 + 2 * 2688) * 2 and "max(2 × 2688, 1024)" in note


def test_a_gated_latent_model_takes_the_latent_width():
    assert (KIMI_K3.moe.latent_size, KIMI_K3.mlp_projections) == (3584, 3)
    size, *_ = moe_profile_bytes(RULE, KIMI_K3, accel=H100, tokens=8192, tp=8, release="0.34.0", quant_id="bf16")
    share = KIMI_K3.moe.expert_intermediate_size // 8
    topk = KIMI_K3.moe.experts_per_token
    assert share < 3584 // 2 and size == 8192 * topk * (3584 + 3584) * 2  # 1.75 GiB, not the hidden size's 3.50
