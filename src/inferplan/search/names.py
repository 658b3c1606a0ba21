"""The names a search request gives, resolved: each list of ids once per catalogue entry.

``["hgx-h100", "HGX H100", "hgx-h100"]`` names one system: searched three times, it would triple
the space for the same answer. Each entry of ``systems``, ``accelerators``, ``engines``,
``quantizations`` and ``kv_cache_dtypes`` becomes its catalogue id, kept once in the order first
named; ``models`` keeps the first name given for each model (a config.json path stays a path);
``vendors``, ``statuses`` and ``form_factors`` keep each value once. An unknown or blank entry is
refused at its place in the list (``systems.1``).
"""

from __future__ import annotations

from typing import Callable

from inferplan.catalog.loader import Catalog
from inferplan.errors import InvalidScenarioError
from inferplan.memory.resolve import resolve_model
from inferplan.search.request import GPU_PRICE_ALLOWED, SearchRequest

AUTO_KV = "auto"  # the model's own KV dtype: a choice of its own, not the dtype it resolves to


def resolved_request(catalog: Catalog, req: SearchRequest) -> SearchRequest:
    """``req`` with every named id checked and resolved, each once (the error names ``<field>.<index>``)."""
    update: dict[str, tuple[str, ...]] = {}
    models: dict[str, str] = {}
    for i, name in enumerate(req.models):
        models.setdefault(resolve_model(catalog, name, field_name=f"models.{i}").id, name)
    update["models"] = tuple(models.values())
    lookups: dict[str, Callable[[str, str], object]] = {
        "systems": catalog.system, "accelerators": catalog.accelerator, "engines": catalog.engine,
        "quantizations": catalog.quantization, "kv_cache_dtypes": _kv_id(catalog)}
    for key, lookup in lookups.items():
        names = getattr(req, key)
        if names is not None:
            update[key] = tuple(dict.fromkeys(_id(lookup(name, f"{key}.{i}")) for i, name in enumerate(names)))
    if req.vendors is not None:
        vendors: dict[str, str] = {}
        for v in req.vendors:
            vendors.setdefault(v.lower(), v)
        update["vendors"] = tuple(vendors.values())
    update["statuses"] = tuple(dict.fromkeys(req.statuses))
    if req.form_factors is not None:
        update["form_factors"] = tuple(dict.fromkeys(req.form_factors))
    if req.workload is not None:
        catalog.workload_presets.get(req.workload, field_name="workload", error=InvalidScenarioError)
    if req.gpu_price_usd is not None:
        update["gpu_price_usd"] = _gpu_prices(catalog, req.gpu_price_usd, update.get("accelerators"))
    return req.model_copy(update=update)


def _gpu_prices(catalog: Catalog, prices: float | dict[str, float],
                searched: tuple[str, ...] | None) -> dict[str, float]:
    """Each GPU price keyed by its accelerator's catalogue id; a bare number is the one accelerator searched's.
    A key naming no accelerator, one the request's accelerators leave out, or one another key already prices
    (``h100`` and ``h100-sxm``) is refused at ``gpu_price_usd.<key>``."""
    if not isinstance(prices, dict):
        if searched is None or len(searched) != 1:
            raise InvalidScenarioError(
                "a bare GPU price needs one accelerator searched, so that it is clear which it prices",
                field="gpu_price_usd", allowed=GPU_PRICE_ALLOWED + "; or name one accelerator")
        return {searched[0]: float(prices)}
    out: dict[str, float] = {}
    for key, usd in prices.items():
        accel = catalog.accelerator(key, f"gpu_price_usd.{key}").id
        if searched is not None and accel not in searched:
            raise InvalidScenarioError(f"{key} is not among the accelerators searched", field=f"gpu_price_usd.{key}",
                                       allowed=f"one of {', '.join(searched)}")
        if accel in out:
            raise InvalidScenarioError(f"{key} prices {accel} a second time: one price per GPU",
                                       field=f"gpu_price_usd.{key}", allowed=f"one price for {accel}")
        out[accel] = float(usd)
    return out


def model_cards(catalog: Catalog, req: SearchRequest) -> dict[str, str]:
    """Each model name of a resolved request (``resolved_request``: one per card) and its model card id."""
    return {name: resolve_model(catalog, name, field_name=f"models.{i}").id for i, name in enumerate(req.models)}


def _id(entry: object) -> str:
    return entry if isinstance(entry, str) else entry.id  # type: ignore[attr-defined]


def _kv_id(catalog: Catalog) -> Callable[[str, str], object]:
    def lookup(name: str, field_name: str) -> object:
        return AUTO_KV if name.strip().lower() == AUTO_KV else catalog.kv_cache_dtype(name, field_name=field_name)
    return lookup
