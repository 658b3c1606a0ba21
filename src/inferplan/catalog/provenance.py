"""Provenance: sources and sourced quantities.

Every number in the catalogue is a ``Sourced`` quantity: a value in SI units, the ``kind`` of
number it is (``spec``, ``measured``, ``derived``, ``assumed``), and the id of a ``Source`` that
says where it was read and when it was checked. YAML may give the value in a named unit
(``{value: 80, unit: GB, kind: spec, source: nvidia-h100}``); it is converted to SI on load, and a
unit of the wrong dimension is an error. A plain number where a sourced quantity is expected
fails validation: the catalogue cannot hold an unsourced number.
"""

import datetime as dt
import functools
import re
from enum import Enum
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, Strict, model_validator

from inferplan.inputs import Input
from inferplan.units import GB, GiB, UNITS


class Kind(str, Enum):
    SPEC = "spec"  # published by the maker (datasheet, model card, config.json)
    MEASURED = "measured"  # observed on real hardware/software, by whoever is cited
    DERIVED = "derived"  # computed from other sourced numbers; the note says how
    ASSUMED = "assumed"  # a planning assumption; the note says why


class Source(Input):
    """Where numbers were read. Either a URL or a seed file (``shared/seeds/...``)."""

    id: str
    title: str
    url: str | None = None
    seed: str | None = None
    checked: dt.date
    note: str | None = None

    @model_validator(mode="after")
    def _has_location(self) -> "Source":
        if not (self.url or self.seed):
            raise ValueError("a source needs a url or a seed file name")
        return self


class Sourced(BaseModel):
    """A number with its provenance, stored in the SI unit of its ``dimension``.

    The catalogue's most numerous object, so it checks its own inputs (as ``Input`` would, at less
    cost): ``value`` is strictly a number — neither a string nor YAML's yes/no."""

    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid", allow_inf_nan=False)
    dimension: ClassVar[str] = "count"

    value: Annotated[float, Strict()]
    kind: Kind
    source: str = Field(min_length=1)
    checked: dt.date | None = None  # overrides the source's checked date for this number
    note: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _convert_unit(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise ValueError(
                "expected a sourced quantity {value, kind, source[, unit, note]}, "
                f"got {data!r}: every catalogue number needs a source"
            )
        data = dict(data)
        unit = data.pop("unit", None)
        if unit is not None:
            if unit not in UNITS:
                raise ValueError(f"unknown unit {unit!r}; known: {', '.join(UNITS)}")
            dimension, factor = UNITS[unit]
            if dimension != cls.dimension:
                raise ValueError(f"unit {unit!r} measures {dimension}, this field needs {cls.dimension}")
            value = data.get("value")
            if "value" in data and (not isinstance(value, (int, float)) or isinstance(value, bool)):
                raise ValueError(f"value: {value!r} is not a number (a number with a unit: {{value: 80, unit: GB}})")
            if "value" in data:
                data["value"] = float(value) * factor
        return data

    @model_validator(mode="after")
    def _finite(self) -> "Sourced":
        if self.value != self.value or self.value in (float("inf"), float("-inf")):
            raise ValueError("value must be finite")
        if self.value < 0:
            raise ValueError("value must be non-negative")
        return self


class Bytes(Sourced):
    dimension: ClassVar[str] = "bytes"
    # the unit the source stated it in (GB or GiB): an HBM card marketed "80 GB" holds 80 GiB, one stated
    # in GiB holds what it says; kept out of JSON output
    stated_unit: str | None = Field(None, exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _keep_unit(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("unit") is not None and "stated_unit" not in data:
            data = {**data, "stated_unit": data["unit"]}
        return data

    @property
    def capacity_gib(self) -> float:
        """The capacity in GiB as memory is built: the marketed GB read as GiB (memory chips come in
        powers of two), unless the source stated GiB already."""
        return self.value / GiB if self.stated_unit in ("GiB", "MiB", "TiB") else self.value / GB


class BytesPerS(Sourced):
    dimension: ClassVar[str] = "bytes_per_s"


class FlopPerS(Sourced):
    dimension: ClassVar[str] = "flop_per_s"


class Watts(Sourced):
    dimension: ClassVar[str] = "w"


class USD(Sourced):
    dimension: ClassVar[str] = "usd"


class EUR(Sourced):
    dimension: ClassVar[str] = "eur"


class Count(Sourced):
    dimension: ClassVar[str] = "count"


class Ratio(Sourced):
    dimension: ClassVar[str] = "ratio"


class Bits(Sourced):
    dimension: ClassVar[str] = "bits"


class Seconds(Sourced):
    dimension: ClassVar[str] = "s"


class UsdPerEur(Sourced):
    dimension: ClassVar[str] = "usd_per_eur"


def iter_sourced(obj: Any, path: str = ""):
    """Yield ``(path, Sourced)`` for every sourced number inside a model, list or dict; a dict keyed by an enum
    says the key's value (``peak_flop_per_s.bf16``)."""
    if isinstance(obj, Sourced):
        yield path, obj
    elif isinstance(obj, BaseModel):
        for name in type(obj).model_fields:
            yield from iter_sourced(getattr(obj, name), f"{path}.{name}" if path else name)
    elif isinstance(obj, dict):
        for key, value in obj.items():
            yield from iter_sourced(value, f"{path}.{key.value if isinstance(key, Enum) else key}")
    elif isinstance(obj, (list, tuple)):
        for i, value in enumerate(obj):
            yield from iter_sourced(value, f"{path}[{i}]")


# the dotted release number a release starts with (b: a llama.cpp build, "b6934")
RELEASE_NUMBER = re.compile(r"^[vVbB]?(\d+(?:\.\d+)*)")


@functools.lru_cache(maxsize=1024)  # rules are ordered by release for every plan: parse each number once
def release_key(release: str) -> tuple[int, ...]:
    """A release number's sort key: its leading dotted integers ("0.6.5.dev3" -> (0, 6, 5)),
    trailing zeros dropped so that 0.11 and 0.11.0 compare equal."""
    match = RELEASE_NUMBER.match(release.strip())
    if not match:
        raise ValueError(f"{release!r} is not a release number")
    parts = [int(p) for p in match.group(1).split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


_POST = re.compile(r"[._-]?post(\d+)", re.IGNORECASE)


@functools.lru_cache(maxsize=1024)
def release_order(release: str) -> tuple[tuple[int, ...], int]:
    """A release's place among the entries of a per-release table: its ``release_key`` and then its post-release
    number ("0.4.6" < "0.4.6.post1" < "0.4.6.post5" < "0.4.7"). A rule's release range keeps ``release_key``, so a
    range ending at 0.4.6 holds 0.4.6's post releases."""
    match = RELEASE_NUMBER.match(release.strip())
    post = _POST.match(release.strip()[match.end():]) if match else None
    return release_key(release), int(post.group(1)) if post else 0
