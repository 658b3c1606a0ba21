"""A catalogue whose measured serving profiles include the user's own runs first, so that every
question that interpolates profiles (the capacity search of ``plan``) plans on them."""

from __future__ import annotations

import dataclasses

from inferplan.catalog.loader import Catalog
from inferplan.catalog.registry import Registry
from inferplan.performance.local_runs import as_profiles
from inferplan.performance.run_record import UserRun


def with_user_profiles(catalog: Catalog, runs: tuple[UserRun, ...]) -> Catalog:
    if not runs:
        return catalog
    mine = {p.id: p for p in as_profiles(runs, catalog)}
    records = {**mine, **catalog.serving_profiles.records}  # yours first: the first matching profile wins
    return dataclasses.replace(catalog, serving_profiles=Registry(catalog.serving_profiles.kind, records))
