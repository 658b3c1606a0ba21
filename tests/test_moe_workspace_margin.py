"""vLLM 0.34's extensible KV cache keeps a margin of max(1 GiB, 0.75 x the transient peak) free, the
transient peak being the allocator's peak less what is still allocated (record_transient_peak): the MoE
workspace manager's buffer stays allocated after the profile, so it is in the activation peak the plan
subtracts but not in the margin (memory/engine_budget.py)."""

import re

import pytest

from inferplan.catalog.loader import load_catalog
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit

GiB = 2**30
CATALOG = load_catalog()


def _margin_gib(plan) -> float:
    note = next(a for a in plan.assumptions if "GiB margin" in a)
    return float(re.search(r"([0-9.]+) GiB margin", note).group(1))


def test_the_kept_modular_workspaces_stay_out_of_the_margin():
    # Qwen3-30B-A3B bf16 on an H100 at 0.34: Triton keeps 8192 x 8 x (2048 + 2048) x 2 B = 0.50 GiB
    plan = fit(Deployment(model="qwen3-30b-a3b", gpu="h100-sxm", quantization="bf16", engine_version="0.34.0"), CATALOG)
    kept = 8192 * 8 * (2048 + 2048) * 2
    assert any("MoE workspaces kept after the profile" in a for a in plan.assumptions)
    assert _margin_gib(plan) == pytest.approx(max(1.0, 0.75 * (plan.activation_bytes_per_gpu - kept) / GiB), abs=0.006)
    assert _margin_gib(plan) < 0.75 * plan.activation_bytes_per_gpu / GiB - 0.3


def test_deepseek_v4s_kept_mxfp4_workspace_stays_out_of_the_margin():
    plan = fit(Deployment(model="deepseek-v4-flash", gpu="h200", gpus=2, max_model_len=32768,
                          engine_version="0.34.0"), CATALOG)
    note = next(a for a in plan.assumptions if "keeps one workspace" in a)
    kept = float(re.search(r"\+([0-9.]+) GiB in the activation peak", note).group(1))
    assert kept > 0.4
    expected = max(1.0, 0.75 * (plan.activation_bytes_per_gpu / GiB - kept))
    assert _margin_gib(plan) == pytest.approx(expected, abs=0.01)
