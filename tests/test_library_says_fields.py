"""The library's errors name the inputs as the domain spells them (``kv_bytes_per_token``, ``model``) and list
them in ``names``, so each shell says them its own way: a flag on the command line, a JSON field in the API."""

from __future__ import annotations

import pytest

from inferplan.economics.plan import plan
from inferplan.economics.scenario import Scenario
from inferplan.errors import InvalidScenarioError
from inferplan.shells.cli_common import flags_in, named_in


def test_an_unpublished_architecture_names_the_fields_that_size_its_cache(sketch_catalog):
    s = Scenario.model_validate(dict(name="t", model="sketch-unpublished", platform={"system": "hgx-b300"},
                                     workload={"preset": "coding-developer-median"}, target_users=100))
    with pytest.raises(InvalidScenarioError) as exc:
        plan(s, sketch_catalog)
    message = str(exc.value)
    assert "--" not in message and "as kv_bytes_per_token" in message and "as model" in message
    flags = named_in({"model": "--model", "kv_bytes_per_token": "--kv-bytes-per-token"}, exc.value.names)
    said = flags_in(message, flags)
    assert "config.json as --model" in said and "as --kv-bytes-per-token" in said
