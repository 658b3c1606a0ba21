"""A config.json with a value of the wrong JSON type anywhere (a string where an object belongs, a
list where a number belongs) is refused with a ConfigImportError naming the key, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferplan.catalog.hf_import import architecture_from_config
from inferplan.errors import ConfigImportError

SHIPPED = Path(__file__).parents[1] / "src" / "inferplan" / "catalog" / "data" / "hf_configs"
COMPRESSED = {"config_groups": {"FP8_BLOCK": {"weights": {"num_bits": 8, "type": "float", "strategy": "block"}}},
              "quant_method": "compressed-tensors", "format": "float-quantized"}


def _llama(**quant) -> dict:
    raw = json.loads((SHIPPED / "llama-3.1-8b.json").read_bytes())
    return {**raw, **quant}


@pytest.mark.parametrize(("quant", "field"), [
    ("fp8", "quantization_config"),
    (["fp8"], "quantization_config"),
    ({**COMPRESSED, "config_groups": "FP8_BLOCK"}, "quantization_config.config_groups"),
    ({**COMPRESSED, "config_groups": {"FP8_BLOCK": 8}}, "quantization_config.config_groups.FP8_BLOCK"),
    ({**COMPRESSED, "config_groups": {"FP8_BLOCK": {"weights": "fp8"}}},
     "quantization_config.config_groups.FP8_BLOCK.weights"),
])
def test_a_quantization_config_that_is_not_an_object_is_named(quant, field):
    with pytest.raises(ConfigImportError) as err:
        architecture_from_config(_llama(quantization_config=quant))
    assert (err.value.field, err.value.allowed) == (field, "an object")


def _paths(obj: dict, prefix: tuple = ()):
    for key, value in obj.items():
        yield (*prefix, key)
        if isinstance(value, dict):
            yield from _paths(value, (*prefix, key))


def _with(raw: dict, path: tuple, value: object) -> dict:
    out = json.loads(json.dumps(raw))
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return out


QUANTIZED = sorted(p.name for p in SHIPPED.glob("*.json") if b"quantization_config" in p.read_bytes())


@pytest.mark.parametrize("name", QUANTIZED)
def test_every_key_of_a_shipped_config_given_the_wrong_type_is_a_named_refusal(name):
    raw = json.loads((SHIPPED / name).read_bytes())
    for path in _paths(raw):
        for wrong in ("fp8", [1], {"x": 1}, 1.5):
            try:
                architecture_from_config(_with(raw, path, wrong))
            except ConfigImportError as exc:
                assert exc.field, (path, wrong, exc)
