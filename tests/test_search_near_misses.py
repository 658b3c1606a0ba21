"""A search whose targets are barely missed says so: the cheaper deployments that miss only service
targets, each by at most the near-miss margin, with the relaxed target that admits them — and a search
with that relaxed target does return them. The picks themselves never change."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from inferplan.search import run
from inferplan.search.defaults import search_defaults
from inferplan.search.near_miss import relaxed_limit
from inferplan.search.request import SearchRequest, Targets
from inferplan.search.run import search
from inferplan.shells.api import create_app

# one model, two accelerators, one engine: about a second a search
SMALL = dict(models=("qwen3-8b",), accelerators=("h100-sxm", "l40s"), engines=("vllm",), request_rate_per_s=4.0,
             input_len=1500, output_len=300, top=3)


@pytest.fixture(scope="module")
def loose(catalog):
    return search(SearchRequest(**SMALL, targets=Targets(min_output_tokens_per_s_per_user=40)), catalog)


@pytest.fixture(scope="module")
def tight(catalog, loose):
    """The loose search's cheapest pick asked for 0.5 % more speed per user than it reaches."""
    speed = 1 / loose.results[0].tpot_p95_s
    return search(SearchRequest(**SMALL, targets=Targets(min_output_tokens_per_s_per_user=round(speed * 1.005, 3))),
                  catalog)


def test_a_search_whose_cheapest_pick_meets_every_target_has_no_near_miss(loose):
    assert loose.results and loose.near_misses == ()


def test_a_barely_missed_target_names_the_cheaper_deployment_and_the_relaxed_target(loose, tight):
    cheapest = loose.results[0]
    assert tight.results[0].monthly_usd > cheapest.monthly_usd  # it no longer meets the target
    [near] = tight.near_misses[:1]
    assert (near.platform, near.monthly_usd) == (cheapest.platform, cheapest.monthly_usd)
    [miss] = near.misses
    speed = 1 / cheapest.tpot_p95_s
    assert miss.target == "min_output_tokens_per_s_per_user" and miss.value == pytest.approx(speed)
    assert miss.miss == pytest.approx(1 - speed / miss.limit) and miss.miss <= tight.near_miss_margin
    # the nearest round floor at or below the speed reached, as many digits as tell it from the limit
    assert miss.relaxed <= speed < miss.relaxed * 1.001 and miss.relaxed < miss.limit
    assert near.relaxed_targets.min_output_tokens_per_s_per_user == miss.relaxed
    assert near.times_cheaper == pytest.approx(tight.results[0].usd_per_mtok / near.usd_per_mtok)


def test_the_relaxed_target_admits_the_near_miss(catalog, tight):
    near = tight.near_misses[0]
    again = search(SearchRequest(**SMALL, targets=near.relaxed_targets), catalog)
    assert (again.results[0].platform, again.results[0].monthly_usd) == (near.platform, near.monthly_usd)
    assert again.near_misses == ()


def test_near_misses_never_change_the_picks(catalog, tight, monkeypatch):
    defaults = search_defaults()
    narrow = defaults.near_miss_margin.model_copy(update={"value": 1e-12})
    monkeypatch.setattr(run, "search_defaults", lambda: defaults.model_copy(update={"near_miss_margin": narrow}))
    without = search(SearchRequest(**SMALL, targets=tight.targets.model_copy(update={"max_utilisation": None})), catalog)
    assert without.near_misses == ()
    assert [d.model_dump(exclude={"notes"}) for d in without.results] == [
        d.model_dump(exclude={"notes"}) for d in tight.results]


@pytest.mark.parametrize("value, limit, lower, relaxed", [
    (69.88, 70, False, 69.8), (69.999, 70, False, 69.999), (3.0041, 3, True, 3.005), (0.81477, 0.8, True, 0.815),
    (110.70246, 111.256, False, 110.7),
])
def test_the_relaxed_limit_is_round_and_on_the_side_that_admits(value, limit, lower, relaxed):
    got = relaxed_limit(value, limit, lower)
    assert got == relaxed and (got >= value if lower else got <= value)


def test_the_api_answers_near_misses_and_the_cli_says_the_flag_that_admits(tight):
    body = {**{k: list(v) if isinstance(v, tuple) else v for k, v in SMALL.items()},
            "targets": {"min_output_tokens_per_s_per_user": tight.targets.min_output_tokens_per_s_per_user}}
    client = TestClient(create_app())
    answer = client.post("/api/search", json=body).json()
    assert answer["near_misses"][0]["misses"][0]["relaxed"] == tight.near_misses[0].misses[0].relaxed
    assert answer["near_miss_margin"] == search_defaults().near_miss_margin.value
    view = client.post("/api/views/search", json=body).json()
    assert view["near_misses"][0].startswith(f"tokens/s per user (p95) ≥ {tight.near_misses[0].misses[0].relaxed:g} tok/s admits")
    schema = client.get("/openapi.json").json()["components"]["schemas"]
    assert schema["SearchResult"]["properties"]["near_misses"]["items"] == {"$ref": "#/components/schemas/NearMiss"}
    assert {"relaxed", "limit", "value", "target"} <= set(schema["TargetMiss"]["properties"])
    loose = client.post("/api/search", json={**body, "targets": {"min_output_tokens_per_s_per_user": 40}}).json()
    assert loose["near_misses"] == []

    from inferplan.shells.cli import app

    args = ["search", "--model", "qwen3-8b", "--accelerators", "h100-sxm,l40s", "--engines", "vllm", "--request-rate",
            "4", "--input-len", "1500", "--output-len", "300", "--top", "3",
            "--min-tokens-per-s-per-user", f"{tight.targets.min_output_tokens_per_s_per_user:g}"]
    out = CliRunner().invoke(app, args, env={"COLUMNS": "200"}).output
    assert f"--min-tokens-per-s-per-user {tight.near_misses[0].misses[0].relaxed:g} admits qwen3-8b on" in out
    assert "Near misses (cheaper than #1" in out
