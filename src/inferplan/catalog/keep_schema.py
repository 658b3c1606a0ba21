"""A catalogue checkpoint's ``keeps_unquantized``: the parameter groups a published build leaves
outside its quantization format, as data with a source.

No postponed annotations here, as in ``schema.py``: pydantic builds the model from real types.
"""

from typing import Literal

from pydantic import ConfigDict, Field, model_validator

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
    # groups the build keeps at 16 bits in only some layers: how many layers (the rest are quantized);
    # a group named here and in ``groups`` is kept whole
    layers: dict[ParamGroup, int] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _layers_counted(self) -> "KeepsUnquantized":
        if any(n < 1 for n in self.layers.values()):
            raise ValueError("a group kept in some layers names at least one layer")
        if set(self.layers) & set(self.groups):
            raise ValueError(f"{sorted(set(self.layers) & set(self.groups))} named as kept whole and in some layers")
        return self
