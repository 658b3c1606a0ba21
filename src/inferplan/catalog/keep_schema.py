"""A catalogue checkpoint's ``keeps_unquantized``: the parameter groups a published build leaves
outside its quantization format, as data with a source.

No postponed annotations here, as in ``schema.py``: pydantic builds the model from real types.
"""

from typing import Literal

from pydantic import ConfigDict, Field

from inferplan.inputs import Input

# the parts the weight estimator counts apart (memory/params.py ParamBreakdown)
ParamGroup = Literal["attention", "mlp", "experts", "shared_experts", "router", "embeddings", "lm_head"]


class KeepsUnquantized(Input):
    """Groups a published build keeps at 16 bits (its config.json's quantization_config ignore list,
    or its model card), with the source that says so."""

    model_config = ConfigDict(defer_build=True)

    groups: tuple[ParamGroup, ...] = Field(min_length=1)
    source: str = Field(min_length=1)  # a source id of the file's ``sources``
    note: str | None = None
