"""What the fields of a run's upload take where the library knows the values (the web page's choices): the
engines, the result formats, each engine's KV cache dtypes, the host KV tier's back ends, the KTransformers
releases and CPU kernels, and the speculative-decoding methods. Other fields are free (numbers, names)."""

from __future__ import annotations

import typing

from pydantic import BaseModel, ConfigDict

from inferplan.catalog.loader import Catalog
from inferplan.inputs.deployment import Deployment
from inferplan.measurements.formats import FORMATS
from inferplan.memory.mtp import SPECULATIVE_METHODS


class UploadChoices(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    engines: tuple[str, ...]
    formats: tuple[str, ...]
    # engine id -> the dtypes it runs, auto first; "": every dtype (the engine left to the file)
    kv_cache_dtypes: dict[str, tuple[str, ...]]
    kv_offloading_backends: tuple[str, ...]
    kt_releases: tuple[str, ...]
    kt_methods: tuple[str, ...]
    speculative_methods: tuple[str, ...]


def upload_choices(catalog: Catalog) -> UploadChoices:
    every_dtype = tuple(k.id for k in catalog.kv_cache_dtypes)
    return UploadChoices(
        engines=tuple(e.id for e in catalog.engines), formats=FORMATS,
        kv_cache_dtypes={"": ("auto", *every_dtype), **{e.id: ("auto", *(e.kv_cache_dtypes or every_dtype)) for e in catalog.engines}},
        kv_offloading_backends=typing.get_args(_stated(Deployment.model_fields["kv_offloading_backend"].annotation)),
        kt_releases=tuple(dict.fromkeys(p.release for p in catalog.kt_cpu_paths)),
        kt_methods=tuple(dict.fromkeys(m for p in catalog.kt_cpu_paths for m in p.kt_methods)),
        speculative_methods=SPECULATIVE_METHODS)


def _stated(annotation: object) -> object:
    """``X`` of an ``X | None`` annotation."""
    return next(a for a in typing.get_args(annotation) if a is not type(None))
