"""An accelerator the filters keep is searched, or the result says why it is not."""

from __future__ import annotations

from inferplan.search.request import SearchRequest
from inferplan.search.space import build_space, platforms


def _req(**kw) -> SearchRequest:
    return SearchRequest(models=("qwen3-235b-a22b-2507",), request_rate_per_s=1.0, input_len=1000, output_len=100,
                         speculative=False, **kw)


def test_every_accelerator_of_a_vendor_is_searched_or_named_with_why(catalog):
    req = _req(vendors=("amd",), engines=("vllm",))
    space = build_space(catalog, req, input_len=1000, output_len=100)
    searched = {p.accelerator.id for p in platforms(catalog, req)}
    named = {key[1]: message for key, message in space.unpriced.items()}
    shipping = {a.id for a in catalog.accelerators.records.values() if a.vendor.lower() == "amd"
                and a.status.value == "shipping"}
    runs = set(catalog.engine("vllm").runs_on)
    kept = {a for a in shipping if not runs or catalog.accelerators.records[a].software in runs}
    assert kept <= searched | set(named)
    assert "mi355x" in kept  # the catalogue's MI355X is one vllm runs on
    for accel, message in named.items():
        assert accel not in searched
        assert message.startswith("not searched: the catalogue has no rental listing")
        assert catalog.accelerators.records[accel].name in message
    assert all(key[2] == "vllm" for key in space.unpriced)


def test_buying_only_names_an_accelerator_with_no_system_to_buy(catalog):
    req = _req(vendors=("amd",), engines=("vllm",), pricing="buy")
    space = build_space(catalog, req, input_len=1000, output_len=100)
    messages = {key[1]: m for key, m in space.unpriced.items()}
    assert "mi300x" in messages  # rented in the catalogue, yet no system of it to buy
    assert "no rental listing" not in messages["mi300x"] and "no system built on it to buy" in messages["mi300x"]


def test_named_platforms_leave_nothing_unsearched_to_explain(catalog):
    space = build_space(catalog, _req(accelerators=("mi300x",), engines=("vllm",)), input_len=1000, output_len=100)
    assert space.unpriced == {}


def test_the_search_lists_an_unsearched_accelerator_among_the_infeasible(catalog):
    from inferplan.search.run import search

    req = _req(vendors=("amd",), engines=("llamacpp",), statuses=("shipping",), max_gpus=1)
    listed = {(x.platform, x.reason) for x in search(req, catalog).infeasible}
    assert ("mi350x", "price") in listed  # no listing rents it on demand and no system of it is catalogued
