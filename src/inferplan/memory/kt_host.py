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
    command gives the weight format (engine_flags.yaml; GGUF: LLAMAFILE), else the release's default."""
    return _resolve(catalog, release, method, quantization)[0]


def kt_expert_format(catalog: Catalog, release: str | None, method: str | None,
                     quantization: str) -> KtExpertFormat | None:
    """What the experts of this release and ``--kt-method`` take in host RAM (None: the path states
    none, and they are the deployment's weight format). A stated method that does not run beside the
    GPU's ``quantization`` is refused, naming the methods that do."""
    path, resolved = _resolve(catalog, release, method, quantization)
    fmt = next((f for f in path.expert_formats if f.kt_method == resolved), None)
    if method is not None and fmt is not None and quantization not in fmt.gpu_formats:
        paths = [p for p in catalog.kt_cpu_paths if p.release == path.release]
        fitting = [f.kt_method for p in paths for f in p.expert_formats if quantization in f.gpu_formats]
        raise InvalidScenarioError(
            f"KTransformers {resolved} CPU experts run beside {', '.join(fmt.gpu_formats)} GPU weights, "
            f"not {quantization}", field="kt_method", allowed=", ".join(fitting) or "another weight format")
    return fmt


def _resolve(catalog: Catalog, release: str | None, method: str | None, quantization: str) -> tuple[KtCpuPath, str]:
    """The path and the ``--kt-method`` it runs (its first when the release's default is taken)."""
    release = release or DEFAULT_RELEASE
    paths = [p for p in catalog.kt_cpu_paths if p.release == release]
    if not paths:
        raise InvalidScenarioError(f"no KTransformers CPU path is described for release {release!r}", field="kt_release",
                                   allowed=", ".join(sorted({p.release for p in catalog.kt_cpu_paths})))
    method = method or (_launch_method(catalog, quantization) if release == DEFAULT_RELEASE else None)
    if method is None:
        path = next(p for p in paths if p.default_method)
        return path, path.kt_methods[0]
    for p in paths:
        if method.upper() in p.kt_methods:
            return p, method.upper()
    raise InvalidScenarioError(f"KTransformers {release} has no CPU expert method {method!r}", field="kt_method",
                               allowed=", ".join(m for p in paths for m in p.kt_methods))


def _launch_method(catalog: Catalog, quantization: str) -> str | None:
    """The ``--kt-method`` the launch command gives this weight format, if any."""
    flags = flags_for(catalog, "ktransformers")
    rule = flags.settings.get("kt_method") if flags is not None else None
    return rule.values.get(quantization) if rule is not None else None
