"""A Kubernetes Deployment + Service that runs a planned deployment's launch command.

Built as dicts and written with ``yaml.safe_dump``: one pod per serving instance (its GPUs
requested and limited through the vendor's device-plugin resource), as many replicas as the plan
has instances, a memory-backed /dev/shm (larger for a pod of several GPUs, ``shm_bytes_multi_gpu``), the
engine's image, its model cache and Hugging Face token (``deploy.model_cache``), a startup probe whose window
covers the checkpoint's download and load, and a readiness probe on its health path. Image, shared-memory
size, download directory, health path and resource names are data (``catalog/data/engine_flags.yaml``). A command that reads an options file (TensorRT-LLM's
``--extra_llm_api_options``) gets it from a ConfigMap, mounted read-only at ``OPTIONS_DIR``. An instance
over several hosts (``deploy.nodes``) runs as a LeaderWorkerSet instead, one pod per host
(``deploy.lws``), with a Service on the leaders.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import yaml

from inferplan.memory.hardware import with_default_engine
from inferplan.memory.fit import as_planned
from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.deploy.checks import check_deployable
from inferplan.deploy.image import EngineImage, engine_image
from inferplan.deploy.lws import LEADER_LABEL, leader_worker_set
from inferplan.deploy.nodes import shell_arithmetic, shell_join
from inferplan.deploy.model_name import unchecked_model_note
from inferplan.deploy.command import (DEFAULT_HOST, LaunchCommand, Role, Speculative, engine_flags, here_document,
                                      later_release, launch_command, planned_speculative, with_draft)
from inferplan.deploy.ollama_launch import client_steps, ollama_launch_data, ollama_pod
from inferplan.errors import InvalidScenarioError, UnsupportedSettingError
from inferplan.inputs.deployment import Deployment
from inferplan.deploy.output import Output
from inferplan.memory.hardware import resolve_hardware
from inferplan.memory.layout import instance_gpus
from inferplan.deploy.model_cache import (PROBE_PERIOD_S, CacheVolume, cache_comment, cache_parts, cache_volume,
                                          check_cache_kept, check_cache_stated, checkpoint_bytes, startup_failures)
from inferplan.units import GiB, MiB

OPTIONS_DIR = "/etc/inferplan"  # where a pod finds the command's options file
READINESS_FAILURES = 3  # Kubernetes' default: once started, three failed probes take the pod out of the Service
# the downward API's field of a pod's own IP, given to a container as an environment variable (Kubernetes docs,
# https://kubernetes.io/docs/tasks/configure-pod-container/environment-variable-expose-pod-information/)
POD_IP_FIELD = "status.podIP"
POD_SHELL = ("/bin/sh", "-c")  # runs a pod's command where it needs the shell's arithmetic (``nodes.shell_arithmetic``)


def kubernetes_manifest(d: Deployment, catalog: Catalog | None = None, *, role: Role = "both",
                        speculative: Speculative | None = None, name: str | None = None,
                        model_cache: str | None = None) -> str:
    """YAML documents for ``d``: an apps/v1 Deployment and a v1 Service, after a v1 ConfigMap holding
    the command's options file when it has one."""
    return manifest_parts(d, catalog or load_catalog(), role=role, speculative=speculative, name=name,
                          model_cache=model_cache)[0]


def manifest_parts(d: Deployment, catalog: Catalog, *, role: Role, speculative: Speculative | None,
              name: str | None = None, pod_names: bool = False,
              annotations: dict[str, str] | None = None,
              model_cache: str | None = None) -> tuple[str, EngineImage, LaunchCommand]:
    """The manifest's YAML, the image its pods run (``deploy.image``) and the command they run; ``pod_names``: the pods as a StatefulSet
    behind a headless Service, so each is reached at its own stable name (``pod_address``); ``annotations``: on
    each pod (what a router that finds the pods reads from them); ``model_cache``: the pods' model cache
    (``deploy.model_cache``: ``pvc:NAME`` or a node path; None: the default claim)."""
    cache = cache_volume(model_cache)
    speculative = planned_speculative(d, catalog, speculative)
    d = as_planned(with_draft(d, catalog, speculative), catalog)  # --gpus or a system alone: fit's layout
    command = launch_command(d, catalog, role=role, speculative=speculative, host=DEFAULT_HOST, files_dir=OPTIONS_DIR,
                             target="k8s")
    flags = engine_flags(catalog, d.engine)
    hw = resolve_hardware(catalog, d)
    resource = catalog.gpu_resources.records.get(hw.accel.vendor)
    check_cache_kept(model_cache, flags, command.runner, catalog)
    ollama = ollama_launch_data(catalog) if command.runner == "ollama" else None
    image = EngineImage(image=ollama.image(hw.accel.vendor)) if ollama and ollama.image(hw.accel.vendor) else \
        None if ollama else engine_image(flags, hw.accel.vendor, command.engine_version, later_release(command.argv, flags))
    if resource is None or image is None:
        what = command.runner or flags.engine
        missing = f"{hw.accel.vendor} GPUs have no Kubernetes device-plugin resource here" if resource is None \
            else f"no {what} container image for {hw.accel.vendor} GPUs is recorded"
        raise UnsupportedSettingError(f"no Kubernetes manifest for {hw.accel.name} with {what}: {missing}",
                                      field="format", allowed="shell")
    per_pod = instance_gpus(d)
    if hw.gpus % per_pod:
        raise InvalidScenarioError(f"{hw.gpus} GPUs are not a whole number of {per_pod}-GPU instances "
                                   "(TP × PP × the stated DP)", field="gpus", allowed=f"a multiple of {per_pod}")
    app = name or _name(command, d)
    download = checkpoint_bytes(d, catalog, flags)
    pod_setup = PodSetup(cache, startup_failures(flags, download), instance_gpus(d) > 1, hw.accel.vendor)
    def labels() -> dict:  # a fresh dict each time: a shared one would be written as a YAML anchor
        return {"app.kubernetes.io/name": app, "app.kubernetes.io/component": role}

    def pod(argv: tuple[str, ...], gpus: int, serves: bool = True) -> dict:
        if ollama is not None:  # Ollama's server, the tag pulled once it answers
            steps = client_steps(ollama.ready, command.then, here_document(command.files[0]) if command.files else None)
            return ollama_pod("\n".join(steps), argv, _env(command.env, flags), image.image, resource.resource, gpus,
                              command.port, ollama)
        return _pod(command, flags, image.image, resource.resource, gpus, f"{app}-options", argv, serves, pod_setup)

    if command.hosts > 1:  # one pod per host, as a LeaderWorkerSet group
        head, worker = command.host_commands[0], command.host_commands[1]
        per_host = per_pod // command.hosts
        workload = leader_worker_set(app, labels, replicas=hw.gpus // per_pod, size=command.hosts,
                                     leader=pod(head.argv, per_host), worker=pod(worker.argv, per_host, serves=False))
        service_selector = {**labels(), **LEADER_LABEL}
    else:
        workload, service_selector = _deployment(app, labels, hw.gpus // per_pod, pod(command.argv, per_pod),
                                                 pod_names, annotations or {}), labels()
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": app, "labels": labels()},
        "spec": {"selector": service_selector, "ports": [
            {"name": "http", "port": command.port, "targetPort": "http"},
            *({"name": p["name"], "port": p["containerPort"], "targetPort": p["name"]} for p in _peer_ports(command, flags))],
            **({"clusterIP": "None"} if pod_names else {})},
    }
    options = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{app}-options", "labels": labels()},
                "data": {f.path.rsplit("/", 1)[-1]: f.text for f in command.files}}] if command.files and not ollama else []
    text = yaml.dump_all([*options, workload, service], Dumper=ManifestDumper, sort_keys=False)
    comment = cache_comment(cache, download) if flags.model_cache is not None and ollama is None else ""
    return comment + text, image, command


def _deployment(app: str, labels, replicas: int, pod: dict, pod_names: bool = False,
                annotations: dict[str, str] | None = None) -> dict:
    """An apps/v1 Deployment of ``replicas`` pods like ``pod`` (with ``annotations``); ``pod_names``: a
    StatefulSet governed by the Service ``app``, its pods started together."""
    named = {"serviceName": app, "podManagementPolicy": "Parallel"} if pod_names else {}
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet" if pod_names else "Deployment",
        "metadata": {"name": app, "labels": labels()},
        "spec": {
            **named,
            "replicas": replicas,
            "selector": {"matchLabels": labels()},
            "template": {"metadata": {"labels": labels(), **({"annotations": annotations} if annotations else {})},
                         "spec": pod},
        },
    }


def pod_address(app: str, index: int) -> str:
    """The DNS name of pod ``index`` of the StatefulSet ``app`` behind its headless Service ``app``: each pod is
    named ``<statefulset>-<index>`` and reached at ``<pod>.<service>`` (Kubernetes StatefulSet API,
    https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/stateful-set-v1/ serviceName)."""
    return f"{app}-{index}.{app}"


class ManifestDumper(yaml.SafeDumper):
    """``yaml.safe_dump`` with a text of several lines (a ConfigMap's file) as a literal block."""


ManifestDumper.add_representer(str, lambda dumper, text: dumper.represent_scalar(
    "tag:yaml.org,2002:str", text, style="|" if "\n" in text else None))


@dataclass(frozen=True)
class PodSetup:
    """What every pod of a manifest shares: its model cache, its startup probe's window, whether it holds
    more than one GPU (its /dev/shm: ``shm_bytes_multi_gpu``) and its GPUs' vendor (``shm_bytes_by_vendor``)."""

    cache: CacheVolume
    startup_failures: int
    multi_gpu: bool
    vendor: str = ""


def _pod(command: LaunchCommand, flags, image: str, resource: str, gpus: int, options_map: str,
         argv: tuple[str, ...], serves: bool, setup: PodSetup) -> dict:
    """A pod that runs ``argv`` on ``gpus`` GPUs, its model cache mounted (``deploy.model_cache``); ``serves``: it
    listens on the API port (a startup probe sized to the checkpoint's download, then a readiness probe on the
    engine's health path), not a worker host of a multi-host instance."""
    volumes, mounts, env = cache_parts(flags, setup.cache)
    if command.files:
        volumes.append({"name": "options", "configMap": {"name": options_map}})
        mounts.append({"name": "options", "mountPath": OPTIONS_DIR, "readOnly": True})
    shm = flags.shm_bytes_multi_gpu if setup.multi_gpu and flags.shm_bytes_multi_gpu else \
        flags.shm_bytes_by_vendor.get(setup.vendor, flags.shm_bytes)
    if shm is not None:
        volumes.append({"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": _quantity(shm.value)}})
        mounts.append({"name": "dshm", "mountPath": "/dev/shm"})
    launcher = len(flags.launcher)
    def probe(failures: int) -> dict:  # a fresh dict each time: a shared one would be written as a YAML anchor
        return {"httpGet": {"path": flags.health_path, "port": "http"}, "periodSeconds": PROBE_PERIOD_S,
                "failureThreshold": failures}

    launch = tuple(flags.image_launcher or argv[:launcher])
    # a worker's first rank from its index: the shell works it out, then runs the engine
    run, args = ((POD_SHELL, (f"exec {shell_join((*launch, *argv[launcher:]))}",)) if shell_arithmetic(argv)
                 else (launch, argv[launcher:]))
    container = {
        "name": flags.engine,
        "image": image,
        "command": list(run),
        "args": list(args),
        **({"env": [*_env(command.env, flags), *env]} if command.env or env else {}),
        "ports": [{"name": "http", "containerPort": command.port}, *_peer_ports(command, flags)],
        "resources": {"requests": {resource: gpus}, "limits": {resource: gpus}},
        "volumeMounts": mounts,
        "startupProbe": probe(setup.startup_failures),
        "readinessProbe": probe(READINESS_FAILURES),
    }
    if not serves:
        del container["ports"], container["readinessProbe"], container["startupProbe"]
    return {"containers": [container], "volumes": volumes}


def _env(env: dict[str, str], flags) -> list[dict]:
    """The container's environment; the variable that tells a pool's worker the address its peers reach it at
    (``DisaggregationRule.peer_address``) is the pod's own IP, from the downward API (``POD_IP_FIELD``)."""
    told = flags.disaggregation.peer_address.env if flags.disaggregation else None
    return [{"name": k, "valueFrom": {"fieldRef": {"fieldPath": POD_IP_FIELD}}} if k == told else {"name": k, "value": v}
            for k, v in env.items()]


def _peer_ports(command: LaunchCommand, flags) -> list[dict]:
    """A pool worker's further ports its peers connect to (``DisaggregationRule.worker_ports``: vLLM's NIXL side
    channel, SGLang's bootstrap port), each at the value the command starts it with, else the first worker's; the
    pool's Service forwards them too, as a peer may reach the worker at the Service's address."""
    rule = flags.disaggregation
    if command.role == "both" or rule is None:
        return []
    out = []
    for n, (name, first) in enumerate(rule.worker_ports.items()):
        value = command.env.get(name) or (command.argv[command.argv.index(name) + 1] if name in command.argv else first)
        out.append({"name": f"kv-{n}", "containerPort": int(value)})
    return out


def _quantity(size_bytes: float) -> str:
    """Bytes as a Kubernetes quantity: whole GiB as Gi, otherwise whole MiB as Mi."""
    return f"{int(size_bytes // GiB)}Gi" if size_bytes % GiB == 0 else f"{int(size_bytes // MiB)}Mi"


def _name(command: LaunchCommand, d: Deployment) -> str:
    """A DNS-1035 label (lower case, digits, '-'; at most 63; starts with a letter) from engine and model."""
    base = re.sub(r"[^a-z0-9]+", "-", f"{command.runner or command.engine}-{d.model.rsplit('/', 1)[-1]}".lower()).strip("-")
    suffix = "" if command.role == "both" else f"-{command.role}"
    return (base[: 63 - len(suffix)].rstrip("-") or "inferplan") + suffix


class LaunchPlan(Output):
    """How to launch a deployment: its command, and the Kubernetes manifest when one was asked for."""

    command: LaunchCommand
    # YAML documents: a ConfigMap when the command reads a file, a Deployment (or LeaderWorkerSet), a Service
    manifest: str | None = None
    image: str | None = None  # the container image the manifest runs
    notes: tuple[str, ...] = ()  # about the manifest (its image's release); the command's are in command.notes


def launch_plan(d: Deployment, catalog: Catalog | None = None, *, output_format: Literal["shell", "k8s"] = "shell",
                role: Role = "both", speculative: Speculative | None = None,
                model_cache: str | None = None) -> LaunchPlan:
    """The launch command of ``d`` and, for ``k8s``, the manifest that runs it; refused where ``fit`` or
    ``perf`` refuse ``d`` (``deploy.checks``), as the deployment it drafts with."""
    catalog = catalog or load_catalog()
    check_cache_stated(model_cache, output_format)
    d = with_default_engine(d, catalog)
    check_deployable(with_draft(d, catalog, planned_speculative(d, catalog, speculative)), catalog)
    unchecked = unchecked_model_note(d, catalog)  # a model name the catalogue lacks: a repo id, or refused
    command = launch_command(d, catalog, role=role, speculative=speculative)
    if unchecked:
        command = command.model_copy(update={"notes": (*command.notes, unchecked)})
    if output_format != "k8s":
        return LaunchPlan(command=command)
    manifest, image, pods = manifest_parts(d, catalog, role=role, speculative=speculative, model_cache=model_cache)
    # the command's notes as its pods run it (a LeaderWorkerSet names its leader's address itself)
    command = command.model_copy(update={"notes": (*pods.notes, *((unchecked,) if unchecked else ()))})
    return LaunchPlan(command=command, manifest=manifest, image=image.image, notes=image.notes)
