"""The engine release a launch runs, and the container image of that release.

A deployment is planned at an engine release (``memory.admission.planned_release``: the one it states,
else the engine's current release); its manifest runs that release's image where the engine's flag
record names an image per release (``EngineFlags.release_images``: ``vllm/vllm-openai:v{release}``).
Where it names none for the GPU vendor, or no release is planned, the manifest runs the image the
record names for its flags (``EngineFlags.images``) and a note says that the image's release is not
the planned one.
"""

from __future__ import annotations

import re

from inferplan.catalog.flag_parts_schema import LaterFlags
from inferplan.catalog.flags_schema import EngineFlags
from inferplan.catalog.loader import Catalog
from inferplan.catalog.memory_rules import parse_engine_version
from inferplan.deploy.output import Output
from inferplan.errors import InferplanError, InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.admission import planned_release
from inferplan.memory.resolve import resolve_model

TAG_RELEASE_PARTS = 3  # release images are tagged major.minor.patch (v0.11.0, v0.5.21, 1.0.0)


class EngineImage(Output):
    """The container image a manifest runs, and what to know about its release."""

    image: str
    notes: tuple[str, ...] = ()


def planned_engine_release(d: Deployment, catalog: Catalog) -> str | None:
    """The engine release ``d`` is planned at, as ``fit`` plans it (None: the engine has no release on record
    and ``d`` states none)."""
    engine = catalog.engine(d.engine, field_name="engine").id
    try:
        arch = resolve_model(catalog, d.model).architecture
    except InferplanError:  # a model the catalogue cannot read: its release is the engine's
        arch = None
    planned, _ = planned_release(catalog, d.model_copy(update={"engine": engine}), arch)
    if planned.engine_version is None:
        return None
    try:
        return parse_engine_version(planned.engine_version)[0]
    except ValueError as exc:
        raise InvalidScenarioError(str(exc), field="engine_version", allowed="a release number, like 0.11.0") from None


def engine_image(flags: EngineFlags, vendor: str, release: str | None, later: LaterFlags | None) -> EngineImage | None:
    """The image of ``release`` for ``vendor``'s GPUs; else the image recorded for the flags (for flags only a
    later release takes: that release's), with a note; None where the record names no image for the vendor."""
    pattern = flags.release_images.get(vendor)
    if release is not None and pattern is not None:
        return EngineImage(image=pattern.replace("{release}", _tag_release(release)))
    image = (later.images if later is not None and later.images else flags.images).get(vendor)
    if image is None:
        return None
    if release is None:
        return EngineImage(image=image, notes=(f"the plan names no {flags.engine} release (state engine_version to "
                                               f"plan one): the manifest runs {image}",))
    return EngineImage(image=image, notes=(f"no {flags.engine} {release} image for {vendor} GPUs is recorded: the "
                                           f"manifest runs {image}, whose release may not be {release}; put an image "
                                           f"of {release} in its place",))


def _tag_release(release: str) -> str:
    """A release number as image tags write it: at least major.minor.patch (0.11 -> 0.11.0)."""
    match = re.match(r"^(\d+(?:\.\d+)*)(.*)$", release)
    if match is None:
        return release
    parts = match.group(1).split(".")
    parts += ["0"] * (TAG_RELEASE_PARTS - len(parts))
    return ".".join(parts) + match.group(2)
