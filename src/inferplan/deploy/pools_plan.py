"""How to launch a deployment of separate prefill and decode pools, as ``inferplan deploy --prefill-instances``
and ``POST /api/deploy`` with ``prefill_instances`` state it: the shell script of every worker and the
router (``deploy.pools_launch``) or, for ``k8s`` instead, one Deployment + Service per pool (its instances as
replicas, each pod requesting its instance's GPUs) and the router as a Deployment + Service pointed at
the pools' Services — or, where the decode reaches the prefill at the host the router names (SGLang's
bootstrap server), at each prefill pod of a StatefulSet behind a headless Service (at most
``MAX_LISTED_WORKERS`` of them, as the router names each).

The deployment is the decode instance (``replicas`` of it); the prefill instance is the same deployment
in the prefill layout (``prefill_deployment``), with no running-sequence cap and no drafts — the
instance a search pick's prefill pool runs, so a pick's ``deploy`` field and ``inferplan deploy`` with
its flags print the same launch.
"""

from __future__ import annotations

from typing import Literal

import yaml
from pydantic import Field, model_validator

from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.deploy.checks import check_deployable
from inferplan.deploy.copies import copies_note
from inferplan.deploy.command import Speculative, engine_flags, planned_speculative, with_draft
from inferplan.deploy.model_cache import check_cache_stated, startup_window_s
from inferplan.deploy.manifest import OPTIONS_DIR, ManifestDumper, manifest_parts, pod_address
from inferplan.deploy.output import Output
from inferplan.deploy.pod_discovery import access_docs, discovering_pod, discovery_argv, prefill_annotations
from inferplan.deploy.pools import PoolsLaunch, check_listed, pools_launch, worker_notes
from inferplan.deploy.router import Worker, router_argv, router_file, worker_ports
from inferplan.errors import InvalidScenarioError, UnsupportedSettingError
from inferplan.inputs import Input
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import as_planned
from inferplan.memory.hardware import resolve_hardware, with_default_engine
from inferplan.memory.layout import instance_gpus
from inferplan.memory.state_pool import without_draft_models

MAX_INSTANCES = 4096  # as many instances of a pool as ``simulate`` runs


class PrefillLayout(Input):
    """A prefill pool's instances and layout; a size left out is the decode instance's."""

    prefill_instances: int = Field(ge=1, le=MAX_INSTANCES, description="prefill instances")
    prefill_tensor_parallel_size: int | None = Field(None, ge=1, le=1024, description="the prefill instance's tensor "
                                                     "parallel size")
    prefill_pipeline_parallel_size: int | None = Field(None, ge=1, le=1024, description="the prefill instance's "
                                                       "pipeline parallel size")
    prefill_data_parallel_size: int | None = Field(None, ge=1, le=1024, description="the prefill instance's data "
                                                   "parallel size, with expert parallelism")
    prefill_enable_expert_parallel: bool | None = Field(None, description="expert parallelism in the prefill instance")
    replicas: int = Field(1, ge=1, le=MAX_INSTANCES, description="decode instances (the deployment's)")
    host_gpus: int | None = Field(None, ge=1, le=1024, description=(
        "GPUs one host has (a rented instance's; at most one OS host's); default the system's host, else every worker "
        "on one host, or the host of an instance that spans several"))

    @model_validator(mode="after")
    def _dp_with_ep(self) -> "PrefillLayout":
        if (self.prefill_data_parallel_size or 1) > 1 and self.prefill_enable_expert_parallel is False:
            raise InvalidScenarioError("a prefill data-parallel size is run with expert parallelism",
                                       field="prefill_data_parallel_size",
                                       allowed="leave it out, or with prefill_enable_expert_parallel")
        return self


def prefill_deployment(decode: Deployment, *, tensor_parallel_size: int | None = None,
                       pipeline_parallel_size: int | None = None, data_parallel_size: int | None = None,
                       enable_expert_parallel: bool | None = None) -> Deployment:
    """The prefill instance of separate pools beside ``decode``: its model, hardware, formats and context in
    the prefill layout (a size left out: the decode's), on its own GPUs, with no cap and no drafts."""
    tp = tensor_parallel_size or decode.tensor_parallel_size or 1
    pp = pipeline_parallel_size or decode.pipeline_parallel_size or 1
    ep = decode.enable_expert_parallel if enable_expert_parallel is None else enable_expert_parallel
    dp = (data_parallel_size or 1) if ep else None
    return without_draft_models(decode).model_copy(update={
        "tensor_parallel_size": tp, "pipeline_parallel_size": pp, "data_parallel_size": dp if dp and dp > 1 else None,
        "enable_expert_parallel": ep, "gpus": tp * pp * (dp or 1), "max_num_seqs": None})


class PoolsPlan(Output):
    """How to launch separate pools: the script, or the Kubernetes manifest when one was asked for."""

    launch: PoolsLaunch | None = None  # the shell script (None under k8s: the manifest is what runs)
    prefill_instances: int
    decode_instances: int
    gpus: int  # every worker's GPUs, both pools
    manifest: str | None = None
    image: str | None = None
    notes: tuple[str, ...] = ()  # about the manifest and the commands its pods run; the script's are in launch.notes


def pools_plan(d: Deployment, pools: PrefillLayout, catalog: Catalog | None = None, *,
               output_format: Literal["shell", "k8s"] = "shell", speculative: Speculative | None = None,
               model_cache: str | None = None) -> PoolsPlan:
    """``pools.replicas`` decode instances of ``d`` behind ``pools.prefill_instances`` prefill instances
    (``prefill_deployment``), each refused where ``fit`` or ``perf`` refuse it; ``speculative``: the decode
    pool's drafts; ``model_cache``: the pods' model cache (``deploy.model_cache``). An engine without prefill/decode disaggregation is refused naming ``prefill_instances``."""
    catalog = catalog or load_catalog()
    check_cache_stated(model_cache, output_format)
    d = with_default_engine(d, catalog)
    flags = engine_flags(catalog, d.engine)
    if flags.disaggregation is None:
        raise UnsupportedSettingError(f"{flags.engine} {flags.version} runs no separate prefill and decode pools",
                                      field="prefill_instances", allowed="leave it out, or an engine with them: " + ", ".join(
                                          f.engine for f in catalog.engine_flags if f.disaggregation))
    speculative = planned_speculative(d, catalog, speculative)
    host_gpus = pools.host_gpus
    if d.system is not None:  # each worker runs its instance's GPUs of the system's hosts
        host_gpus = host_gpus or catalog.system(d.system, "system").accelerator_count
        d = as_planned(d, catalog)
        d = d.model_copy(update={"gpus": instance_gpus(d)})
    pre = prefill_deployment(d, tensor_parallel_size=pools.prefill_tensor_parallel_size,
                             pipeline_parallel_size=pools.prefill_pipeline_parallel_size,
                             data_parallel_size=pools.prefill_data_parallel_size,
                             enable_expert_parallel=pools.prefill_enable_expert_parallel)
    _check_pipeline(flags.disaggregation, pre, as_planned(d, catalog), pools)
    check_deployable(with_draft(d, catalog, speculative), catalog)
    check_deployable(pre, catalog)
    gpus = pools.prefill_instances * instance_gpus(pre) + pools.replicas * instance_gpus(
        as_planned(with_draft(d, catalog, speculative), catalog))
    plan = PoolsPlan(prefill_instances=pools.prefill_instances, decode_instances=pools.replicas, gpus=gpus)
    if output_format != "k8s":
        return plan.model_copy(update={"launch": pools_launch(
            catalog, pre, d, prefill_instances=pools.prefill_instances, decode_instances=pools.replicas,
            decode_speculative=speculative, host_gpus=host_gpus)})
    return plan.model_copy(update=_pools_manifest(catalog, pre, d, pools, speculative, model_cache))


def _check_pipeline(rule, pre: Deployment, decode: Deployment, pools: PrefillLayout) -> None:
    """Refuse pipeline stages in either pool's instance where the engine's KV connector hands over none
    (``DisaggregationRule.pipeline``), naming the size stated."""
    for d, field in ((decode, "pipeline_parallel_size"), (pre, "prefill_pipeline_parallel_size"
                                                          if pools.prefill_pipeline_parallel_size else "pipeline_parallel_size")):
        refusal = rule.pipeline_refusal(d.pipeline_parallel_size)
        if refusal:
            raise UnsupportedSettingError(refusal, field=field, allowed=f"at most {rule.pipeline.max_pipeline_parallel_size}"
                                          f" with {rule.connector('prefill')}, or tensor parallelism over the GPUs")


def _pools_manifest(catalog: Catalog, pre: Deployment, decode: Deployment, pools: PrefillLayout,
                    speculative: Speculative | None, model_cache: str | None = None) -> dict:
    """Each pool's manifest (``deploy.manifest``: a Deployment of its instances, its Service), then the router's."""
    flags = engine_flags(catalog, decode.engine)
    rule = flags.disaggregation
    # the decode reaches the prefill at the host the router names: each prefill pod is named to the router, by the
    # router itself where it finds the pods (pod_discovery), else by a StatefulSet's stable pod names
    named = pools.prefill_instances > 1 and rule.peer_address.at_router_host
    discovery = rule.pod_discovery if named else None
    texts, workers, image, commands, copies = [], {}, None, [], set()
    for role, d, instances, spec in (("prefill", pre, pools.prefill_instances, None),
                                     ("decode", decode, pools.replicas, speculative)):
        one = as_planned(with_draft(d, catalog, spec), catalog)
        # the pool's GPUs in its instance's layout (left out, fit would lay them out as one larger instance)
        pool = d.model_copy(update={"gpus": instances * instance_gpus(one), "system": None,
                                    "gpu": d.gpu or resolve_hardware(catalog, d).accel.id,
                                    **{k: getattr(one, k) for k in ("tensor_parallel_size", "pipeline_parallel_size",
                                                                    "data_parallel_size")}})
        copies.update(copies_note(as_planned(with_draft(pool, catalog, spec), catalog), catalog))  # the replicas say it
        pod_names = role == "prefill" and named and discovery is None
        if pod_names:
            check_listed(role, instances, why=f"{flags.engine}'s router names each prefill pod (its decode reaches the "
                         "prefill at the host the router names)", instead="")
        annotations = prefill_annotations(rule, discovery) if discovery and role == "prefill" else None
        text, image, command = manifest_parts(pool, catalog, role=role, speculative=spec, pod_names=pod_names,
                                              annotations=annotations, model_cache=model_cache)
        if named and role == "prefill" and command.hosts > 1:  # a LeaderWorkerSet: its worker pods carry the label too
            raise UnsupportedSettingError(
                f"{flags.engine}'s router names each prefill instance's pod (its decode reaches the prefill at the host "
                f"the router names), and a prefill instance over {command.hosts} hosts is a group of pods, whose workers "
                "would be named too", field="format", allowed="shell, or one prefill instance")
        texts.append(text)
        commands.append(command)
        service = next(doc for doc in yaml.safe_load_all(text) if doc["kind"] == "Service")
        name, port = service["metadata"]["name"], service["spec"]["ports"][0]["port"]
        hosts = [pod_address(name, i) for i in range(instances)] if pod_names else [name]
        workers[role] = [Worker(host, port, worker_ports(rule, 0)) for host in hosts]
    if discovery and workers["prefill"][0].port != workers["decode"][0].port:  # one port for every discovered pod
        raise UnsupportedSettingError(f"{flags.engine}'s router finds the pools' pods on one port, and its prefill and "
                                      "decode pods serve on different ones", field="format", allowed="shell")
    app = workers["decode"][0].host.removesuffix("-decode") + "-router"
    window_s = max(startup_window_s(d, catalog, flags) for d in (pre, decode))  # as long as the workers' probes
    texts.append(yaml.dump_all(_router(app, rule, workers, image.image, flags.engine, discovery, window_s), Dumper=ManifestDumper,
                               sort_keys=False))
    if discovery:
        note = ("the router finds each pool's pods itself through the Kubernetes API (by their app.kubernetes.io/name "
                "label, as the decode reaches the prefill at the host the router names), under its own ServiceAccount "
                "with a Role that may get, list and watch the namespace's pods; each prefill pod's annotation gives its "
                "bootstrap port")
    elif named:
        note = ("the router reaches each prefill pod at its own name (a StatefulSet behind a headless Service, as the "
                "decode reaches the prefill at the host the router names) and the decode pool at its Service, which "
                "spreads requests over the pool's pods")
    else:
        note = "the router reaches each pool at its Service, which spreads requests over the pool's pods"
    note = f"{note}; {rule.router_note}" if rule.router_note else note
    return {"manifest": "---\n".join(texts), "image": image.image,
            "notes": tuple(dict.fromkeys((*(n for n in worker_notes(commands) if n not in copies), *image.notes, note)))}


def _router(app: str, rule, workers: dict[str, list[Worker]], image: str, engine: str, discovery=None,
            startup_window_s: int | None = None) -> list[dict]:
    """The router as a Deployment of one pod (no GPU) and a Service on its port; its config file, where it
    reads one, from a ConfigMap in its working directory; with ``discovery``, finding the pools' pods itself
    under its own ServiceAccount (``deploy.pod_discovery``)."""
    labels = lambda: {"app.kubernetes.io/name": app, "app.kubernetes.io/component": "router"}  # noqa: E731
    argv = discovery_argv(rule, discovery, workers) if discovery else router_argv(rule, workers,
                                                                                startup_window_s=startup_window_s)
    config = router_file(rule, workers)
    docs: list[dict] = access_docs(app, labels) if discovery else []
    container: dict = {"name": f"{engine}-router", "image": rule.router_image or image, "command": list(argv[:1]), "args": list(argv[1:]),
                       "ports": [{"name": "http", "containerPort": rule.router_port}]}
    pod: dict = {"containers": [container]}
    if discovery:
        discovering_pod(pod, app)
    if config is not None:
        docs.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{app}-config", "labels": labels()},
                     "data": {rule.router_file.name: yaml.safe_dump(config, sort_keys=False)}})
        container.update(workingDir=OPTIONS_DIR, volumeMounts=[{"name": "config", "mountPath": OPTIONS_DIR, "readOnly": True}])
        pod["volumes"] = [{"name": "config", "configMap": {"name": f"{app}-config"}}]
    docs.append({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": app, "labels": labels()},
                 "spec": {"replicas": 1, "selector": {"matchLabels": labels()},
                          "template": {"metadata": {"labels": labels()}, "spec": pod}}})
    docs.append({"apiVersion": "v1", "kind": "Service", "metadata": {"name": app, "labels": labels()},
                 "spec": {"selector": labels(), "ports": [{"name": "http", "port": rule.router_port, "targetPort": "http"}]}})
    return docs
