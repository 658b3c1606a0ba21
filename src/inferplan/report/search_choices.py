"""The choices a search's filters take, as the web page's "Find the cheapest" form offers them: the
catalogue's vendors and engines, the statuses (and the ones searched when none is named), and the
form factors with the system tiers each covers. The page lists these; it knows none itself."""

from __future__ import annotations

from typing import get_args

from pydantic import BaseModel, ConfigDict

from inferplan.catalog.loader import Catalog
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
    engines: tuple[Choice, ...]


def search_choices(catalog: Catalog) -> SearchChoices:
    return SearchChoices(
        vendors=tuple(Choice(id=v, label=v) for v in catalogue_vendors(catalog)),
        statuses=tuple(Choice(id=s, label=s) for s in get_args(Status)),
        default_statuses=SearchRequest.model_fields["statuses"].default,
        form_factors=tuple(Choice(id=f, label=f if tiers == (f,) else f"{f} ({', '.join(tiers)})")
                           for f, tiers in FORM_FACTOR_TIERS.items()),
        engines=tuple(Choice(id=e.id, label=e.name) for e in catalog.engines))
