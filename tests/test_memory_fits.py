"""``memory_fits`` gives ``plan_memory``'s verdict without searching for the smallest instance that holds
a model that does not fit (the slot bisection's many failing plans), whatever the layout is chosen by."""

from __future__ import annotations

import itertools

import pytest

from inferplan.catalog.loader import load_catalog
from inferplan.inputs.deployment import Deployment
from inferplan.memory import fit as fit_module
from inferplan.memory.fit import memory_fits, plan_memory, verdict_plan

CATALOG = load_catalog()
CASES = [dict(model=m, gpu=g, engine=e, max_model_len=n, max_num_seqs=s)
         for m, g, e, n, s in itertools.product(["qwen3-8b", "gpt-oss-120b", "llama-3.3-70b"], ["rtx-4090", "h100-sxm"],
                                                ["llamacpp", "vllm"], [8192, 32768], [1, 64])]
CASES += [dict(model="deepseek-v3", system="hgx-h100"), dict(model="qwen3-8b", gpu="h100-sxm", gpus=16),
          dict(model="deepseek-v3", gpu="h100-sxm", gpus=16), dict(model="llama-3.3-70b", gpu="rtx-4090", gpus=2)]


@pytest.mark.parametrize("fields", CASES, ids=lambda f: "-".join(str(v) for v in f.values()))
def test_the_verdict_is_the_plans(fields):
    d = Deployment(**fields)
    fit_module._PLANS.clear()  # not read from a plan already made
    fits = memory_fits(d, CATALOG)
    assert fits == plan_memory(d, CATALOG).result.fits


def test_a_plan_that_does_not_fit_is_judged_without_the_smallest_instance_search(monkeypatch):
    d = Deployment(model="llama-3.3-70b", gpu="rtx-4090", engine="llamacpp", max_model_len=8192)
    fit_module._PLANS.clear()
    monkeypatch.setattr(fit_module, "_smallest_fit", lambda *a, **k: pytest.fail("searched the smallest instance"))
    assert memory_fits(d, CATALOG) is False


SEARCHED = {"smallest_fit", "fewest_gpus_fit", "layout_note"}  # what only the smallest-instance search sets


@pytest.mark.parametrize("fields", CASES, ids=lambda f: "-".join(str(v) for v in f.values()))
def test_the_verdict_plan_is_the_plan_but_for_the_search(fields):
    d = Deployment(**fields)
    fit_module._PLANS.clear()
    verdict = verdict_plan(d, CATALOG)
    full = plan_memory(d, CATALOG)
    assert verdict.result.model_dump(exclude=SEARCHED) == full.result.model_dump(exclude=SEARCHED)
    assert (verdict.spec, verdict.accelerator, verdict.weights) == (full.spec, full.accelerator, full.weights)


def test_the_offload_a_row_carries_is_found_without_the_smallest_instance_search(monkeypatch):
    """A what-runs row that does not fit has its smallest instance from the fits matrix already: the weight
    offload found for it does not search for it again."""
    from inferplan.performance.here import _offload

    d = Deployment(model="llama-3.3-70b", gpu="rtx-4090", engine="llamacpp", max_model_len=8192)
    fit_module._PLANS.clear()
    monkeypatch.setattr(fit_module, "_smallest_fit", lambda *a, **k: pytest.fail("searched the smallest instance"))
    found = _offload(d, 128.0, CATALOG)
    assert found is not None and found.fits_host and found.output_tokens_per_s_per_user
