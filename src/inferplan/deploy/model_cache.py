"""Where a Kubernetes pod keeps the checkpoint it downloads, the Hugging Face token it downloads with, and how
long it may take to start.

Each pod mounts a model cache at the engine's download directory (``ModelCache.path`` in engine_flags.yaml:
``/root/.cache/huggingface`` for vLLM and SGLang, as their Kubernetes and Docker guides mount it), so a restarted
pod finds the checkpoint it fetched: a PersistentVolumeClaim the user names (``pvc:NAME``), or a directory on the
node (an absolute path, a ``hostPath``); unnamed, the claim ``DEFAULT_CLAIM``, which must exist. The token comes
from the Secret ``TOKEN_SECRET`` (key ``token``), marked optional so a public model starts without it. A
startup probe holds off the readiness and liveness checks while the pod downloads and loads its weights: its
window is the download of the checkpoint the launch serves (the 16-bit build where the engine quantizes at
load; none where its size is unknown) at the engine record's assumed rate (``download_bytes_per_s``) plus
``LOAD_WINDOW_S`` for loading, graph capture and warm-up; a router that gives up on workers still starting
waits as long (``startup_window_s``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from inferplan.catalog.flags_schema import EngineFlags
from inferplan.catalog.loader import Catalog
from inferplan.deploy.checkpoint import card_of, served_model
from inferplan.errors import InferplanError, InvalidScenarioError, UnsupportedSettingError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.precision import planned_weight_format
from inferplan.memory.resolve import resolve_model
from inferplan.memory.weights import weight_bytes
from inferplan.units import fmt_gb

DEFAULT_CLAIM = "inferplan-model-cache"  # the claim a manifest mounts when none is named: create it first
TOKEN_SECRET = "hf-token-secret"  # the Secret holding the Hugging Face token, under TOKEN_KEY (vLLM's k8s guide)
TOKEN_KEY = "token"
PROBE_PERIOD_S = 10  # assumed: how often the startup probe asks
LOAD_WINDOW_S = 1800  # assumed: loading, CUDA-graph capture and warm-up after the download, 30 minutes
ALLOWED = "pvc:CLAIM_NAME, or an absolute directory on the node other than / (a hostPath)"
# a DNS-1123 subdomain, which a PersistentVolumeClaim's name must be (Kubernetes docs, Object Names and IDs)
CLAIM_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")


@dataclass(frozen=True)
class CacheVolume:
    """The volume a pod keeps its model cache on: a PersistentVolumeClaim or a node directory."""

    claim: str | None = None
    host_path: str | None = None

    def volume(self) -> dict:
        return ({"name": "model-cache", "persistentVolumeClaim": {"claimName": self.claim}} if self.claim else
                {"name": "model-cache", "hostPath": {"path": self.host_path, "type": "DirectoryOrCreate"}})


def cache_volume(text: str | None) -> CacheVolume:
    """``pvc:NAME`` or an absolute node path as the pod's model cache (None: the claim ``DEFAULT_CLAIM``). A
    claim's name is a DNS-1123 subdomain, as Kubernetes requires of an object's name; the node's root is no
    cache directory."""
    if text is None:
        return CacheVolume(claim=DEFAULT_CLAIM)
    if text.startswith("pvc:"):
        claim = text[4:].strip()
        if not CLAIM_NAME.fullmatch(claim) or len(claim) > 253:
            raise InvalidScenarioError(f"model cache claim name {claim!r} is not a Kubernetes object name",
                                       field="model_cache", allowed="pvc:NAME, NAME at most 253 lowercase letters, "
                                       "digits, '-' and '.', starting and ending with a letter or digit")
        return CacheVolume(claim=claim)
    if text.startswith("/") and text.strip("/"):
        return CacheVolume(host_path=text.rstrip("/"))
    raise InvalidScenarioError(f"model cache {text!r} is neither pvc:NAME nor an absolute directory below the node's "
                               "root", field="model_cache", allowed=ALLOWED)


def check_cache_stated(model_cache: str | None, output_format: str) -> None:
    """A model cache is where a Kubernetes pod keeps its checkpoint: stated for a shell script, it is refused."""
    if model_cache is not None and output_format != "k8s":
        raise InvalidScenarioError("a model cache is where a Kubernetes pod keeps its checkpoint: it goes with the "
                                   "k8s format", field="model_cache", allowed="leave it out, or the k8s format")


def check_cache_kept(model_cache: str | None, flags: EngineFlags, runner: str | None, catalog: Catalog) -> None:
    """A stated model cache on a pod that mounts none (an engine record with no download directory, or
    Ollama's server, which pulls its own tag) is refused."""
    if model_cache is not None and (flags.model_cache is None or runner == "ollama"):
        what = "Ollama's server" if runner == "ollama" else f"{flags.engine}'s record names no download directory"
        raise UnsupportedSettingError(f"no model cache to mount: {what}", field="model_cache",
                                      allowed="leave it out, or an engine with one: " + ", ".join(
                                          f.engine for f in catalog.engine_flags if f.model_cache is not None))


def cache_parts(flags: EngineFlags, cache: CacheVolume) -> tuple[list[dict], list[dict], list[dict]]:
    """The pod's volumes, its container's mounts and environment for the engine's model cache and token (none
    where the engine record names no download directory)."""
    rule = flags.model_cache
    if rule is None:
        return [], [], []
    env = [{"name": rule.token_env, "valueFrom": {"secretKeyRef": {"name": TOKEN_SECRET, "key": TOKEN_KEY,
                                                                    "optional": True}}}] if rule.token_env else []
    return [cache.volume()], [{"name": "model-cache", "mountPath": rule.path}], env


def checkpoint_bytes(d: Deployment, catalog: Catalog, flags: EngineFlags) -> float | None:
    """The bytes a pod downloads: one copy of the checkpoint the launch serves (``deploy.checkpoint``), in the
    planned format, or in its own where the engine quantizes it at load (a BF16 build served with
    ``--quantization fp8`` downloads the BF16 weights). None: a size the catalogue cannot tell."""
    try:
        spec = resolve_model(catalog, d.model)
        served = served_model(d, catalog, flags)
        if served.quantization_in_checkpoint:
            return weight_bytes(spec, planned_weight_format(catalog, d, spec)).total_bytes
        builds = card_of(d, catalog).checkpoints if card_of(d, catalog) is not None else ()
        build = next((c for c in builds if c.repo == served.checkpoint), None)
        source = build.quantization if build is not None else spec.native_quantization
        return weight_bytes(spec, catalog.quantization(source)).total_bytes if source else None
    except InferplanError:
        return None


def startup_failures(flags: EngineFlags, checkpoint_bytes: float | None) -> int:
    """Failed startup probes (every ``PROBE_PERIOD_S``) before the pod is restarted: the checkpoint's download at
    the assumed rate (none where its size is unknown) and ``LOAD_WINDOW_S``."""
    rule = flags.model_cache
    download_s = checkpoint_bytes / rule.download_bytes_per_s.value if rule is not None and checkpoint_bytes else 0.0
    return math.ceil((download_s + LOAD_WINDOW_S) / PROBE_PERIOD_S)


def startup_window_s(d: Deployment, catalog: Catalog, flags: EngineFlags) -> int:
    """The seconds a worker of ``d`` may take to download and load its checkpoint: its startup probe's window,
    which a router that gives up on workers waits as long."""
    return startup_failures(flags, checkpoint_bytes(d, catalog, flags)) * PROBE_PERIOD_S


def cache_comment(cache: CacheVolume, checkpoint_bytes: float | None) -> str:
    """The YAML comment ahead of a manifest: what the model cache and token need before it is applied."""
    size = f"the {fmt_gb(checkpoint_bytes, ',.0f')} checkpoint" if checkpoint_bytes else "the checkpoint"
    where = (f"# model cache: the PersistentVolumeClaim {cache.claim!r}: create it first, room for {size} "
             "(ReadWriteMany where pods on several nodes share it)" if cache.claim else
             f"# model cache: {cache.host_path} on each node, room for {size}")
    unknown = "" if checkpoint_bytes else ("\n# startup window: the checkpoint's size is unknown here, so the "
                                           f"window assumes no download ({LOAD_WINDOW_S // 60} minutes to load)")
    return (f"{where}{unknown}\n# Hugging Face token: the Secret {TOKEN_SECRET!r}, key {TOKEN_KEY!r} (optional; a gated "
            "model needs it)\n")
