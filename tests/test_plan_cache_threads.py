"""The memory-plan cache is shared by the API's worker threads: its lookup-and-move and its insert-and-evict
run under one lock, so a request never moves or evicts an entry another request is evicting."""
from collections import OrderedDict

from inferplan.catalog.loader import load_catalog
from inferplan.inputs.deployment import Deployment
from inferplan.memory import fit as fit_module


class _Watched(OrderedDict):
    """An ordered dict that records whether the cache lock was held at each move and eviction."""

    def __init__(self):
        super().__init__()
        self.unlocked: list[str] = []

    def move_to_end(self, key, last=True):
        if not fit_module._PLANS_LOCK.locked():
            self.unlocked.append("move_to_end")
        super().move_to_end(key, last)

    def popitem(self, last=True):
        if not fit_module._PLANS_LOCK.locked():
            self.unlocked.append("popitem")
        return super().popitem(last)


def test_the_plan_cache_moves_and_evicts_only_under_its_lock(monkeypatch):
    watched = _Watched()
    monkeypatch.setattr(fit_module, "_PLANS", watched)
    monkeypatch.setattr(fit_module, "PLANS_KEPT", 1)
    catalog = load_catalog()
    first = Deployment(model="qwen3-8b", gpu="h100-sxm")
    fit_module.plan_memory(first, catalog)
    fit_module.plan_memory(first, catalog)  # a hit: moved to the end
    fit_module.plan_memory(Deployment(model="qwen3-8b", gpu="h100-sxm", max_model_len=8192), catalog)  # evicts
    assert len(watched) == 1
    assert watched.unlocked == []
