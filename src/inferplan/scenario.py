"""Scenario files: YAML read into a ``Scenario`` (``economics/scenario.py``), and the catalogue ids
it names checked.

``load_scenario`` validates a file and reports the first problem as
``file:line: key: message (allowed …)``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import yaml
from pydantic import BaseModel, ValidationError

from inferplan.catalog.loader import Catalog
from inferplan.economics.scenario import Scenario
from inferplan.errors import InferplanError, InvalidScenarioError
from inferplan.input_files import check_yaml_depth, read_text
from inferplan.inputs import WrittenFloat
from inferplan.memory.resolve import resolve_model


def check_references(s: Scenario, catalog: Catalog) -> None:
    """Every catalogue id a scenario names exists (a saved scenario is checked when saved, not
    first when it is compared); the error names the scenario key."""
    lookups = [("engine", lambda: catalog.engine(s.engine, field_name="engine", model=s.model)),
               ("model", lambda: resolve_model(catalog, s.model))]
    if s.quantization:
        lookups.append(("quantization", lambda: catalog.quantization(s.quantization, field_name="quantization")))
    if s.kv_cache_dtype != "auto":
        lookups.append(("kv_cache_dtype", lambda: catalog.kv_cache_dtype(s.kv_cache_dtype, field_name="kv_cache_dtype")))
    if s.platform.system:
        lookups.append(("platform.system", lambda: catalog.system(s.platform.system, field_name="platform.system")))
    if s.platform.gpu:
        lookups.append(("platform.gpu", lambda: catalog.accelerator(s.platform.gpu, field_name="platform.gpu")))
    lookups.append(("workload.preset", lambda: catalog.workload_presets.get(
        s.workload.preset, field_name="workload.preset", error=InvalidScenarioError)))
    for key, lookup in lookups:
        try:
            lookup()
        except InferplanError as exc:
            raise InvalidScenarioError(str(exc), field=key, allowed=exc.allowed) from None


def _line_of(root: yaml.Node | None, loc: tuple) -> int | None:
    node = root
    line = node.start_mark.line + 1 if node is not None else None
    for key in loc:
        if isinstance(node, yaml.MappingNode):
            match = next((v for k, v in node.value if k.value == key), None)
            if match is None:
                key_node = next((k for k, _ in node.value if k.value == key), None)
                return key_node.start_mark.line + 1 if key_node is not None else line
            node = match
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
        else:
            break
        line = node.start_mark.line + 1
    return line


class _UniqueKeys(yaml.SafeLoader):
    """Safe loading that refuses a key given twice in one mapping (plain YAML keeps the last) and
    reads ``1e13`` as the number it looks like (YAML 1.1 wants ``1.0e13``, else it is text)."""

    # a copy, so that the resolver added below stays this loader's and not every SafeLoader's
    yaml_implicit_resolvers = {key: list(rules) for key, rules in yaml.SafeLoader.yaml_implicit_resolvers.items()}

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"key {key!r} is given twice", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


_EXPONENT = "tag:inferplan,2026:exponent"  # 1e13: a number where a number belongs, its text in a text field
_UniqueKeys.add_implicit_resolver(
    _EXPONENT, re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"), list("-+0123456789"))
_UniqueKeys.add_constructor(_EXPONENT, lambda loader, node: WrittenFloat(loader.construct_scalar(node)))


def parse_scenario(text: str, where: str = "<scenario>") -> Scenario:
    check_yaml_depth(text, where=where, field=where, error=InvalidScenarioError)
    try:
        data = yaml.load(text, Loader=_UniqueKeys)  # noqa: S506 - a SafeLoader subclass
        root = yaml.compose(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"{where}:{mark.line + 1}" if mark is not None else where
        problem = getattr(exc, "problem", None) or str(exc)
        raise InvalidScenarioError(f"{at}: not valid YAML: {problem}", field=where, located=True) from None
    if not isinstance(data, dict):
        raise InvalidScenarioError(f"{where}: a scenario is a mapping (model:, platform:, workload: …)", field=where,
                                   located=True)
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        key = ".".join(str(p) for p in loc) or "scenario"
        line = _line_of(root, loc)
        msg = err["msg"].removeprefix("Value error, ")  # pydantic's prefix for a validator's message
        if err["type"] in SECTION_ERRORS:  # a section written as one value (workload: chat-seat)
            msg = f"a section of keys ({key.rsplit('.', 1)[-1]}: {{key: value, …}}), not {err['input']!r}"
        if err["type"] == "extra_forbidden":
            parent = _model_at(loc[:-1])
            allowed = ", ".join(parent.model_fields) if parent else None
            raise InvalidScenarioError(f"{where}:{line}: {key}: unknown key", field=key, allowed=allowed,
                                       located=True) from None
        # chained: a shell reads what the field takes from the pydantic error (shells/pydantic_errors.py)
        raise InvalidScenarioError(f"{where}:{line}: {key}: {msg}", field=key, located=True) from exc


# pydantic's error types for a section (a model) given as something else than a mapping
SECTION_ERRORS = ("model_type", "model_attributes_type", "dict_type")


def _model_at(loc: tuple) -> type[BaseModel] | None:
    model: type[BaseModel] = Scenario
    for key in loc:
        field = model.model_fields.get(str(key))
        ann = getattr(field, "annotation", None) if field else None
        # an optional section (``cell: Cell | None``) is its model
        ann = next((a for a in (ann, *get_args(ann)) if isinstance(a, type) and issubclass(a, BaseModel)), None)
        if ann is None:
            return None
        model = ann
    return model


def load_scenario(path: str | Path) -> Scenario:
    p = Path(path)
    text = read_text(p, field="SCENARIO", error=InvalidScenarioError)
    return parse_scenario(text, where=str(p))
