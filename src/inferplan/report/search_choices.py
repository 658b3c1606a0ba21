"""The choices a search's filters take, as the web page's "Find the cheapest" form offers them: the
catalogue's vendors, systems, accelerators, engines, weight formats and KV-cache types (``auto``, the
model's own, first), the statuses (and the ones searched when none is named), the form factors with the
system tiers each covers, and the request's defaults for the speculative and disaggregated switches.
The page lists these; it knows none itself."""

from __future__ import annotations

from typing import get_args

from pydantic import BaseModel, ConfigDict

from inferplan.catalog.loader import Catalog
from inferplan.search.names import AUTO_KV
from inferplan.search.request import FORM_FACTOR_TIERS, SearchRequest, Status
from inferplan.search.space import catalogue_vendors


class Choice(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    label: str


class SearchChoices(BaseModel):
    model_config = ConfigDict(frozen=True)

    vendors: tuple[Choice, ...]
    statuses: tuple[Choice, ...]
    default_statuses: tuple[str, ...]  # searched when the request names none
    form_factors: tuple[Choice, ...]
    systems: tuple[Choice, ...]
    accelerators: tuple[Choice, ...]
    engines: tuple[Choice, ...]
    quantizations: tuple[Choice, ...]
    kv_cache_dtypes: tuple[Choice, ...]
    speculative: bool  # the request's defaults: both tried unless switched off
    disaggregated: bool


def search_choices(catalog: Catalog) -> SearchChoices:
    return SearchChoices(
        vendors=tuple(Choice(id=v, label=v) for v in catalogue_vendors(catalog)),
        statuses=tuple(Choice(id=s, label=s) for s in get_args(Status)),
        default_statuses=SearchRequest.model_fields["statuses"].default,
        form_factors=tuple(Choice(id=f, label=f if tiers == (f,) else f"{f} ({', '.join(tiers)})")
                           for f, tiers in FORM_FACTOR_TIERS.items()),
        systems=tuple(Choice(id=s.id, label=s.name) for s in catalog.systems),
        accelerators=tuple(Choice(id=a.id, label=a.name) for a in catalog.accelerators),
        engines=tuple(Choice(id=e.id, label=e.name) for e in catalog.engines),
        quantizations=tuple(Choice(id=q.id, label=q.name) for q in catalog.quantizations),
        kv_cache_dtypes=(Choice(id=AUTO_KV, label=f"{AUTO_KV} (the model's own)"),
                         *(Choice(id=k.id, label=k.id) for k in catalog.kv_cache_dtypes)),
        speculative=SearchRequest.model_fields["speculative"].default,
        disaggregated=SearchRequest.model_fields["disaggregated"].default)
