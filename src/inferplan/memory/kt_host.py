"""A KTransformers deployment's CPU side: the release and ``--kt-method`` path it runs
(catalog/data/kt_cpu_paths.yaml), the format its experts take in host RAM and the sockets it spreads
them over, resolved once for the host RAM it holds (memory/kt_offload.py) and the step times
(performance/kt_cpu.py)."""

from __future__ import annotations

from dataclasses import dataclass

from inferplan.catalog.flags_schema import flags_for
from inferplan.catalog.kt_schema import KtCpuPath, KtExpertFormat
from inferplan.catalog.loader import Catalog
from inferplan.errors import InvalidScenarioError

DEFAULT_RELEASE = "kt-kernel"


@dataclass(frozen=True)
class KtHost:
    path: KtCpuPath
    sockets: int  # CPU sockets (NUMA nodes) the experts are spread over
    tokens_per_expert_per_token: float  # experts_per_token / num_experts: a step's tokens over the experts

    @property
    def expert_copies(self) -> int:
        """Copies of the host experts in RAM: one per node when the path replicates them."""
        return self.sockets if self.path.numa == "replicate" else 1


def kt_path(catalog: Catalog, release: str | None, method: str | None, quantization: str) -> KtCpuPath:
    """The path of a release and ``--kt-method``; left out, kt-kernel's method is the one its launch
    command gives the weight format (engine_flags.yaml; GGUF: LLAMAFILE), else the first whose CPU
    experts run beside it (kt_cpu_paths.yaml ``expert_formats``), else the release's default."""
    return _resolve(catalog, release, method, quantization)[0]


def kt_method(catalog: Catalog, release: str | None, method: str | None, quantization: str) -> str:
    """The ``--kt-method`` a release runs beside ``quantization``: the stated one, else as ``kt_path`` picks it."""
    return _resolve(catalog, release, method, quantization)[1]


def kt_expert_format(catalog: Catalog, release: str | None, method: str | None,
                     quantization: str) -> KtExpertFormat | None:
    """What the experts of this release and ``--kt-method`` take in host RAM (None: the path states
    none, and they are the deployment's weight format)."""
    path, resolved = _resolve(catalog, release, method, quantization)
    return next((f for f in path.expert_formats if f.kt_method == resolved), None)


def _resolve(catalog: Catalog, release: str | None, method: str | None, quantization: str) -> tuple[KtCpuPath, str]:
    """The path and the ``--kt-method`` it runs (its first when the release's default is taken). A method,
    stated or picked, whose CPU experts do not run beside the GPU's ``quantization`` is refused, naming
    the methods that do (the weight format, where none does)."""
    release = release or DEFAULT_RELEASE
    paths = [p for p in catalog.kt_cpu_paths if p.release == release]
    if not paths:
        raise InvalidScenarioError(f"no KTransformers CPU path is described for release {release!r}", field="kt_release",
                                   allowed=", ".join(sorted({p.release for p in catalog.kt_cpu_paths})))
    fitting = [(p, f.kt_method) for p in paths for f in p.expert_formats if quantization in f.gpu_formats]
    picked = method or (_launch_method(catalog, quantization) if release == DEFAULT_RELEASE else None)
    if picked is None and fitting:
        return fitting[0]
    if picked is None:
        path = next(p for p in paths if p.default_method)
        found = path, path.kt_methods[0]
    else:
        found = next(((p, picked.upper()) for p in paths if picked.upper() in p.kt_methods), None)
    if found is None:
        raise InvalidScenarioError(f"KTransformers {release} has no CPU expert method {picked!r}", field="kt_method",
                                   allowed=", ".join(m for p in paths for m in p.kt_methods))
    fmt = next((f for f in found[0].expert_formats if f.kt_method == found[1]), None)
    if fmt is not None and quantization not in fmt.gpu_formats:
        _refuse(paths, found[1], fmt, quantization, stated=method is not None)
    return found


def _refuse(paths: list[KtCpuPath], method: str, fmt: KtExpertFormat, quantization: str, *, stated: bool) -> None:
    """Refuse CPU experts of ``method`` beside GPU weights in ``quantization``: naming ``kt_method`` and the
    methods that run beside it, or where none does (and none was stated), ``quantization`` and the formats
    some method runs beside."""
    fitting = [f.kt_method for p in paths for f in p.expert_formats if quantization in f.gpu_formats]
    beside = ", ".join(fmt.gpu_formats)
    if fitting or stated:
        raise InvalidScenarioError(f"KTransformers {method} CPU experts run beside {beside} GPU weights, not {quantization}",
                                   field="kt_method", allowed=", ".join(fitting) or "another weight format")
    formats = dict.fromkeys(q for p in paths for f in p.expert_formats for q in f.gpu_formats)
    raise InvalidScenarioError(f"no KTransformers CPU expert method (kt_method) is recorded beside {quantization} GPU "
                               f"weights: the default, {method}, is converted only for {beside}",
                               field="quantization", allowed=", ".join(formats))


def _launch_method(catalog: Catalog, quantization: str) -> str | None:
    """The ``--kt-method`` the launch command gives this weight format, if any."""
    flags = flags_for(catalog, "ktransformers")
    rule = flags.settings.get("kt_method") if flags is not None else None
    return rule.values.get(quantization) if rule is not None else None
