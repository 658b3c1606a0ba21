"""The Monte Carlo's served users stay under a stated prefill pool's bound: the pool keeps up with no more users'
prompts however many the decode cells carry in a draw, so the bands price the users the plan supports."""

from __future__ import annotations

from inferplan.economics.plan import plan
from inferplan.economics.scenario import Scenario
from inferplan.economics.uncertainty import simulate


def test_the_bands_price_the_users_a_binding_prefill_pool_keeps_up_with(catalog):
    s = Scenario.model_validate(dict(
        model="qwen3-8b", engine="vllm", platform={"system": "hgx-h100"},
        workload={"preset": "chat-seat", "input_tokens_per_request": 30_000}, target_users=200_000,
        cell={"tensor_parallel_size": 1}, replicas=6,
        prefill_pool={"instances": 1, "cell": {"tensor_parallel_size": 1}}))
    r = plan(s, catalog)
    assert r.binding == "prefill pool" and r.prefill_users == r.supported_users
    u = simulate(r, s, draws=2_000, seed=3, catalog=catalog)
    band = u.owner_cost_usd_per_mtok
    assert band.p10 < r.owner_cost_usd_per_mtok < band.p90, (band, r.owner_cost_usd_per_mtok)
