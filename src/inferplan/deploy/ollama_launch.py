"""Ollama's own launch for a deployment that runs an Ollama tag's build (``catalog/ollama.py``).

A person who names a model by its Ollama tag (``qwen3:32b``) and plans the tag's build (its engine and weight
format, ``NamedBuild.run_by``) is given Ollama's commands, not llama-server's: the server started with the
environment that carries the plan's settings, the tag pulled, and how to call it. Every command, variable and
Modelfile parameter name is data (``ollama.yaml``'s ``launch``, ``OllamaLaunch``). A setting Ollama takes only
when a model loads (the layers on the GPU: ``num_gpu``) is written to a Modelfile that ``ollama create`` makes
a model from; a setting it cannot take is said in a note, never dropped unsaid.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from inferplan.catalog.flags_schema import EngineFlags
from inferplan.catalog.loader import Catalog
from inferplan.catalog.ollama import OLLAMA, NamedBuild, named_build
from inferplan.catalog.ollama_schema import OllamaLaunch
from inferplan.deploy.stated import stated_or_default
from inferplan.inputs.deployment import Deployment

MODELFILE = "Modelfile"  # the file ``ollama create`` reads (its -f names it)
# the launch settings of the engine a tag's build runs on (llama.cpp's rules), as the plan states them
PLANNED = ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "max_model_len", "max_num_seqs",
           "kv_cache_dtype", "max_num_batched_tokens", "ubatch_size", "n_gpu_layers", "n_cpu_moe")


@dataclass(frozen=True)
class OllamaStart:
    """What starts Ollama for one instance: the server's argv and environment, then the client commands run
    once it answers (pull the tag; with a Modelfile, create the model from it), and the name clients call."""

    argv: tuple[str, ...]
    env: dict[str, str]
    ready: tuple[str, ...]
    steps: tuple[tuple[str, ...], ...]
    modelfile: str | None  # the Modelfile's text (None: the tag is served as pulled)
    served: str  # the model name clients give (the tag, or the model created from the Modelfile)
    port: int
    host_env: str  # the variable telling the server where to listen and a client where to reach it
    release: str
    call: str  # how to call the served model
    notes: tuple[str, ...] = ()


def ollama_launch_data(catalog: Catalog) -> OllamaLaunch | None:
    runner = catalog.ollama_runners.records.get(OLLAMA)
    return runner.launch if runner is not None else None


def ollama_build(d: Deployment, catalog: Catalog) -> NamedBuild | None:
    """The Ollama tag's build ``d`` (as planned, after ``with_default_engine``) runs, where Ollama's launch is on
    record; None: ``d`` is launched by its engine's command."""
    named = named_build(catalog, d.model)
    if named is None or ollama_launch_data(catalog) is None or not named.run_by(d.engine, d.quantization):
        return None
    return named


def ollama_start(d: Deployment, catalog: Catalog, named: NamedBuild, engine: EngineFlags, *, host: str,
                 port: int | None) -> OllamaStart:
    """Ollama's launch of ``d`` (running ``named``, the tag's build): the variables of ``OllamaLaunch.env`` for the
    settings the plan states (the running-sequence cap at the engine's planned default where none is stated),
    the KV-cache type with the variables it needs, the listen address, and a stated layer count as a Modelfile
    parameter, and a setting only the engine takes (``OllamaLaunch.engine_env``) as the engine's variable in the
    server's environment, said for every model it loads. ``engine``: the flag record of the engine Ollama runs, whose settings say what the plan states."""
    data = ollama_launch_data(catalog)
    port = port or data.default_port
    env = {data.host_env: f"{host}:{port}"}
    notes: list[str] = []
    parameters: dict[str, object] = {}  # Modelfile PARAMETER name -> value
    stated: list[str] = []
    for setting in PLANNED:  # an unstated setting Ollama takes at the value the plan assumes (the engine's default)
        value = stated_or_default(d, engine, setting) if setting in data.env else getattr(d, setting)
        if value in (None, "auto") or (setting.endswith("_parallel_size") and value == 1):
            continue
        if setting == "kv_cache_dtype":
            env.update(_kv_env(d, catalog, data, notes))
        elif setting in data.env:
            env[data.env[setting]] = str(value)
        elif setting in data.modelfile_parameters:
            parameters[data.modelfile_parameters[setting]] = value
            stated.append(f"{setting} {value} as PARAMETER {data.modelfile_parameters[setting]}")
        elif setting in data.engine_env:
            env[data.engine_env[setting]] = str(value)
            notes.append(f"{setting} {value} as {data.engine_env[setting]}: {data.engine_env_note}")
        elif setting in data.by_itself:
            notes.append(f"{setting} {value}: not set, {data.by_itself[setting]}")
        else:
            notes.append(f"{setting} {value}: Ollama takes no setting for it, so it runs as Ollama chooses")
    if d.sched_spread and "sched_spread" in data.env:  # a switch: Ollama reads it with strconv.ParseBool
        env[data.env["sched_spread"]] = "1"
    if d.gpus_chosen_by:  # the GPUs Ollama loads the tag on, as planned
        notes.append(d.gpus_chosen_by)
    served, steps, modelfile = named.tag, [(*data.pull, named.tag)], None
    if parameters:
        served = f"{named.tag}-" + "-".join(f"{k.replace('_', '')}{v}" for k, v in parameters.items())
        modelfile = "\n".join([f"FROM {named.tag}", *(f"PARAMETER {k} {v}" for k, v in parameters.items())])
        steps.append((*data.create, served, data.modelfile_flag, MODELFILE))
        notes.append(f"{', '.join(stated)} in a {MODELFILE}: Ollama takes it only when a model loads, so "
                     f"{shlex.join(data.create)} makes {served} from {named.tag} with it")
    call = (f"{shlex.join((*data.run, served))}, or the OpenAI-compatible API at "
            f"http://localhost:{port}{data.openai_path} with model {served}")
    return OllamaStart(argv=tuple(data.server), env=env, ready=tuple(data.ready), steps=tuple(steps),
                       modelfile=modelfile, served=served, port=port, host_env=data.host_env, release=data.release,
                       call=call, notes=tuple(notes))


def _kv_env(d: Deployment, catalog: Catalog, data: OllamaLaunch, notes: list[str]) -> dict[str, str]:
    """The KV-cache type's variable and those it needs (Flash Attention on); a type Ollama lacks is said."""
    kv = catalog.kv_cache_dtype(d.kv_cache_dtype).id
    if kv not in data.kv_cache_types:
        notes.append(f"kv_cache_dtype {kv}: Ollama's KV-cache types are {', '.join(data.kv_cache_types.values())}, "
                     "so it runs its default")
        return {}
    needs = ", ".join(f"{k}={v}" for k, v in data.kv_cache_env.items())
    notes.append(f"a {kv} KV cache: Ollama quantizes it only with Flash Attention on ({needs})")
    return {data.env["kv_cache_dtype"]: data.kv_cache_types[kv], **data.kv_cache_env}


def ollama_script(start: OllamaStart, env_words: list[str], modelfile_here: str | None) -> str:
    """Shell lines that start the server in the background, wait until it answers, run the client steps (the
    Modelfile written before its create) and keep the server in the foreground."""
    address = f"export {start.host_env}={shlex.quote(start.env[start.host_env])}"  # the server's and the clients'
    words = [w for w in env_words if not w.startswith(f"{start.host_env}=")]
    lines = [address, f"{' '.join([*words, shlex.join(start.argv)])} &",
             *client_steps(start.ready, start.steps, modelfile_here)]
    return "\n".join([*lines, f"# call it: {start.call}", "wait"])


def client_steps(ready: tuple[str, ...], steps: tuple[tuple[str, ...], ...], modelfile_here: str | None) -> list[str]:
    """Shell lines run once the server starts: wait until ``ready`` succeeds, then run ``steps`` (pull the tag;
    the Modelfile written before the model is created from it)."""
    lines = [f"until {shlex.join(ready)} >/dev/null 2>&1; do sleep 1; done"]
    for step in steps:
        if MODELFILE in step and modelfile_here:
            lines.append(modelfile_here)
        lines.append(shlex.join(step))
    return lines


def ollama_pod(start_script: str, argv: tuple[str, ...], env: list[dict], image: str, resource: str, gpus: int,
               port: int, data: OllamaLaunch) -> dict:
    """A pod running Ollama's server on ``gpus`` GPUs with ``env``, its models in a volume at
    ``OllamaLaunch.models_dir``; the tag is pulled (and a Modelfile's model made) by a postStart hook, which
    Kubernetes runs before the container counts as running, so the readiness probe passes once it is there."""
    container = {
        "name": "ollama",
        "image": image,
        "command": list(argv[:1]),
        "args": list(argv[1:]),
        "env": env,
        "ports": [{"name": "http", "containerPort": port}],
        "resources": {"requests": {resource: gpus}, "limits": {resource: gpus}},
        "volumeMounts": [{"name": "models", "mountPath": data.models_dir}],
        "lifecycle": {"postStart": {"exec": {"command": ["/bin/sh", "-c", start_script]}}},
        "readinessProbe": {"httpGet": {"path": data.health_path, "port": "http"}},
    }
    return {"containers": [container], "volumes": [{"name": "models", "emptyDir": {}}]}
