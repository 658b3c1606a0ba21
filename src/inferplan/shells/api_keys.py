"""One key for one thing across the API's routes, and the keys a body takes when it has an unknown one.

``/api/search`` names its workload preset ``workload`` and ``/api/simulate`` ``workload_preset`` (its
``workload`` is the lengths object): each route takes the other's spelling as well (``SearchBody``,
``preset_in_workload``), as every ``deployment`` takes ``accelerator`` (what ``/api/fit`` answers with) for
``gpu`` (``inputs/deployment.py``). A key a body does not take ("Extra inputs are not permitted") is
answered with the keys it does take (``accepted_keys``), read from the route's body model.
"""

from __future__ import annotations

import json
import typing
from typing import Any

from pydantic import AliasChoices, BaseModel, Field
from starlette.requests import Request

from inferplan.search.request import SearchRequest
from inferplan.shells.api_body import BODY_STATE
from inferplan.shells.pydantic_errors import field_keys, model_at


class SearchBody(SearchRequest):
    """``SearchRequest`` as the API takes it: ``workload_preset`` is also the workload preset's key."""

    workload: str | None = Field(None, validation_alias=AliasChoices("workload", "workload_preset"),
                                 description=SearchRequest.model_fields["workload"].description
                                 + "; workload_preset, as /api/simulate names it, is taken too")


def preset_in_workload(data: Any) -> Any:
    """A body whose ``workload`` is a preset's id (as ``/api/search`` names it) with its ``workload_preset``
    key moved there; anything else as given (a second preset key is refused by the body as usual)."""
    if isinstance(data, dict) and isinstance(data.get("workload"), str) and "workload_preset" not in data:
        data = {**data, "workload_preset": data["workload"]}
        del data["workload"]
    return data


ALIASES = {"gpu": "accelerator"}  # a key the library names its field by -> the other key a body may send it under


def as_sent(loc: list, request: Request | None) -> list:
    """``loc`` (``["body", "deployment", "gpu"]``) with its last key as the body sent it: ``accelerator``
    where the object there has that key and not ``gpu``, as pydantic's own errors name it."""
    other = ALIASES.get(loc[-1]) if loc and loc[0] == "body" else None
    body = request.scope.get("state", {}).get(BODY_STATE) if request is not None and other else None
    if not body:
        return loc
    try:
        node = json.loads(body)
        for key in loc[1:-1]:
            node = node[int(key)] if isinstance(node, list) else node[key]
    except (ValueError, KeyError, IndexError, TypeError, RecursionError):
        return loc
    return [*loc[:-1], other] if isinstance(node, dict) and other in node and loc[-1] not in node else loc


def alias_properties(schemas: dict[str, dict], models: typing.Iterable[type[BaseModel]]) -> None:
    """Each other key a model takes for a field (its ``AliasChoices`` after the first: ``accelerator`` for
    ``gpu``) listed in the model's OpenAPI schema beside the field, with the field's type, so a schema that
    forbids unknown keys lists every key its routes take; one object takes one of them (``not`` both)."""
    for model in models:
        schema = schemas.get(model.__name__, {})
        properties = schema.get("properties", {})
        for f in model.model_fields.values():
            if not isinstance(f.validation_alias, AliasChoices):
                continue
            first, *others = [c for c in f.validation_alias.choices if isinstance(c, str)]
            for other in others:
                if first in properties and other not in properties:
                    properties[other] = {**properties[first], "title": other, "description": f"taken for {first}"}
                    schema.setdefault("allOf", []).append({"not": {"required": [first, other]}})


def accepted_keys(body: type[BaseModel] | None, loc: tuple | list) -> str | None:
    """The keys the object at ``loc`` (``["body", ..., the unknown key]``) takes, by the route's body model
    (``body_model``)."""
    model = model_at(body, list(loc)[1:-1])
    if model is None:
        return None
    return ", ".join(sorted({key for name, f in model.model_fields.items() for key in field_keys(name, f)}))


def body_model(request: Request) -> type[BaseModel] | None:
    """The model the route validates its body with, if it has one (a route that reads its body itself
    names it as its endpoint's ``body_model``)."""
    route = request.scope.get("route")
    endpoint = getattr(route, "endpoint", None)
    if endpoint is None:
        return None
    if isinstance(getattr(endpoint, "body_model", None), type):
        return endpoint.body_model
    hints = typing.get_type_hints(endpoint)
    hints.pop("return", None)
    models = [h for h in hints.values() if isinstance(h, type) and issubclass(h, BaseModel)]
    return models[0] if len(models) == 1 else None
