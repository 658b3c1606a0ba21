"""The Monte Carlo's served users stay under a stated prefill pool's bound at the draw's speed: the bound comes
from the same speed model each draw varies, so the bands price the users the plan supports with the speed spread."""

from __future__ import annotations

import math

from inferplan.economics.plan import plan
from inferplan.economics.scenario import Scenario
from inferplan.economics.uncertainty import simulate


def _prefill_bound() -> Scenario:
    """Six TP1 decode cells beside one TP1 prefill instance that keeps up with fewer users' 30k-token prompts."""
    return Scenario.model_validate(dict(
        model="qwen3-8b", engine="vllm", platform={"system": "hgx-h100"},
        workload={"preset": "chat-seat", "input_tokens_per_request": 30_000}, target_users=200_000,
        cell={"tensor_parallel_size": 1}, replicas=6,
        prefill_pool={"instances": 1, "cell": {"tensor_parallel_size": 1}}))


def test_the_bands_price_the_users_a_binding_prefill_pool_keeps_up_with(catalog):
    s = _prefill_bound()
    r = plan(s, catalog)
    assert r.binding == "prefill pool" and r.prefill_users == r.supported_users
    u = simulate(r, s, draws=2_000, seed=3, catalog=catalog)
    band = u.owner_cost_usd_per_mtok
    assert band.p10 < r.owner_cost_usd_per_mtok < band.p90, (band, r.owner_cost_usd_per_mtok)


def test_a_prefill_bound_band_keeps_the_speed_spread(catalog):
    """The prefill pool's bound comes from the same speed model each draw varies, so a plan the pool binds spreads
    its owner cost per Mtok at least as the speed spread alone does: P90/P10 of 1/speed is exp(2 × 1.2816 σ)."""
    s = _prefill_bound()
    r = plan(s, catalog)
    assert r.binding == "prefill pool"
    band = simulate(r, s, draws=4_000, seed=5, catalog=catalog).owner_cost_usd_per_mtok
    speed_only = math.exp(2 * 1.2816 * catalog.constant("speed-capacity-log-sigma"))
    assert band.p90 / band.p10 > 0.9 * speed_only, (band, speed_only)
