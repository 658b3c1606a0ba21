"""``inferplan deploy``: the command (or Kubernetes manifest) that launches a planned deployment."""

from typing import Optional

import typer

from inferplan.errors import InferplanError
from inferplan.shells.cli_common import (
    catalog_for,
    FLAGS,
    JsonOpt,
    console,
    deployment_from,
    emit_json,
    err_console,
    fail,
    fail_naming,
)
from inferplan.shells.cli_flags import FORMAT, LAUNCHED_HOST, LAYOUT, LIMITS, deployment_flags

FORMATS = ("shell", "k8s")
ROLES = ("both", "prefill", "decode")
# domain fields the deploy library names -> this command's flags
DEPLOY_FLAGS = {**FLAGS, "speculative": "--speculative-tokens", "speculative.tokens": "--speculative-tokens",
                "speculative.method": "--speculative-method", "speculative.draft_model": "--draft-model",
                "mtp_draft": "--speculative-method",  # deploy drafts with a model's MTP layers by --speculative-method mtp
                "role": "--role", "format": "--format", "engine": "--engine", "model": "--model",
                "quantization": "--quantization", "enable_expert_parallel": "--enable-expert-parallel",
                "model_cache": "--model-cache"}


# the speculative decoding a launch command starts (deploy, acceptance)
DraftTokensOpt = typer.Option(0, "--speculative-tokens", min=0, help="Draft tokens per step (0: no speculative decoding).")
DraftMethodOpt = typer.Option(
    None, "--speculative-method",
    help="ngram | draft_model | eagle3 | mtp (default: mtp where the model has MTP layers and the engine drafts with them, as perf plans it; else ngram, refused on an engine whose launch has no ngram).")
DraftModelOpt = typer.Option(None, "--draft-model", help="Draft checkpoint for draft_model and eagle3.")


@deployment_flags(*LAYOUT, *LIMITS, *FORMAT, *LAUNCHED_HOST)
def deploy_cmd(
    flags: dict,
    output_format: str = typer.Option("shell", "--format", help="shell (the launch command; one part per host for an instance over several) | k8s (a Deployment, or a LeaderWorkerSet over several hosts, and a Service)."),
    role: str = typer.Option("both", "--role", help="both | prefill | decode: a disaggregated pool's side."),
    speculative_tokens: int = DraftTokensOpt,
    speculative_method: Optional[str] = DraftMethodOpt,
    draft_model: Optional[str] = DraftModelOpt,
    prefill_instances: Optional[int] = typer.Option(None, "--prefill-instances", help="Separate pools, as simulate takes them: this many prefill instances ahead of the deployment, which is the decode instance (--replicas of it); prints every worker, hosts that run the same ones once, and the router that names each (at most 512 instances a pool); --format k8s: a Deployment per pool with its replicas, and the router's."),
    prefill_tensor_parallel_size: Optional[int] = typer.Option(None, "--prefill-tensor-parallel-size", help="With --prefill-instances: the prefill instance's TP size (default the deployment's)."),
    prefill_pipeline_parallel_size: Optional[int] = typer.Option(None, "--prefill-pipeline-parallel-size", help="With --prefill-instances: its PP size (default the deployment's)."),
    prefill_data_parallel_size: Optional[int] = typer.Option(None, "--prefill-data-parallel-size", help="With --prefill-instances and --prefill-expert-parallel: its DP size."),
    prefill_enable_expert_parallel: Optional[bool] = typer.Option(None, "--prefill-expert-parallel/--prefill-no-expert-parallel", help="With --prefill-instances: whether the prefill instance runs expert parallelism (default the deployment's)."),
    replicas: Optional[int] = typer.Option(None, "--replicas", help="With --prefill-instances: decode instances (default 1)."),
    model_cache: Optional[str] = typer.Option(None, "--model-cache", help="With --format k8s: where each pod keeps the checkpoint it downloads, pvc:CLAIM_NAME or a directory on the node (default: the claim inferplan-model-cache, to be created first)."),
    host_gpus: Optional[int] = typer.Option(None, "--host-gpus", help="With --prefill-instances: GPUs one host has, e.g. a rented instance's (default the --system's host: a rack's compute tray; else every worker on one host, or an instance's host where it spans several)."),
    as_json: bool = JsonOpt,
) -> None:
    """The command that launches a deployment: vllm serve, SGLang (KTransformers too), trtllm-serve, llama-server, mlx_lm.server; Ollama's own for an Ollama tag's build."""
    from inferplan.deploy import launch_plan

    if output_format not in FORMATS:
        fail(f"--format: {output_format!r} is not a format", field="--format", allowed=" | ".join(FORMATS))
    if role not in ROLES:
        fail(f"--role: {role!r} is not a role", field="--role", allowed=" | ".join(ROLES))
    d = deployment_from(flags)
    speculative = None
    if speculative_tokens:
        speculative = speculative_input(method=speculative_method, tokens=speculative_tokens, draft_model=draft_model)
    pools = {"prefill_instances": prefill_instances, "prefill_tensor_parallel_size": prefill_tensor_parallel_size,
             "prefill_pipeline_parallel_size": prefill_pipeline_parallel_size,
             "prefill_data_parallel_size": prefill_data_parallel_size,
             "prefill_enable_expert_parallel": prefill_enable_expert_parallel, "replicas": replicas, "host_gpus": host_gpus}
    stated = {k: v for k, v in pools.items() if v is not None}
    if stated:
        _pools(d, stated, output_format, role, speculative, as_json, model_cache)
        return
    plan = _call(launch_plan, d, catalog_for(d), output_format=output_format, role=role, speculative=speculative,
                 model_cache=model_cache)
    _show(plan, (*plan.command.notes, *plan.notes), plan.command.script, as_json)


def _pools(d, stated: dict, output_format: str, role: str, speculative, as_json: bool,
           model_cache: str | None = None) -> None:
    """Separate pools (``deploy.pools_plan``): the script of every worker and the router, or their manifests."""
    from inferplan.deploy.pools_plan import pools_plan

    if "prefill_instances" not in stated:
        flag = _flag(next(iter(stated)))
        fail(f"{flag}: a setting of separate pools goes with --prefill-instances", field=flag,
             allowed="leave it out, or give --prefill-instances")
    if role != "both":
        fail("--role: separate pools start both sides; --role prints one worker of a side", field="--role",
             allowed="leave --role out with --prefill-instances")
    layout = _call(_layout, stated)
    plan = _call(pools_plan, d, layout, catalog_for(d), output_format=output_format, speculative=speculative,
                 model_cache=model_cache)
    script = plan.launch  # the shell script; under k8s the manifest, whose notes are the plan's
    _show(plan, (*(script.notes if script else ()), *plan.notes), script.script if script else "", as_json)


def _show(plan, notes: tuple[str, ...], script: str, as_json: bool) -> None:
    """The plan as JSON, or its notes on stderr and its manifest (for k8s) or script on stdout."""
    if as_json:
        emit_json(plan)
        return
    for note in notes:
        err_console.print(f"[yellow]note:[/] {note}", highlight=False)
    console.out(plan.manifest.rstrip("\n") if plan.manifest is not None else script, highlight=False)


def _layout(stated: dict):
    """The pools the flags state, or the flag at fault."""
    from pydantic import ValidationError

    from inferplan.deploy.pools_plan import PrefillLayout
    from inferplan.shells.pydantic_errors import allowed_by

    try:
        return PrefillLayout(**stated)
    except ValidationError as exc:
        first = exc.errors()[0]
        flag = _flag(str(first["loc"][0]) if first["loc"] else None) or "--prefill-instances"
        message = first["msg"].removeprefix("Value error, ")
        fail(f"{flag}: {message}", field=flag, allowed=allowed_by(first), detail=message)


def _call(fn, *args, **kwargs):
    """Call the library; an error names this command's flag for the domain field at fault."""
    try:
        return fn(*args, **kwargs)
    except InferplanError as exc:
        fail_naming(DEPLOY_FLAGS, exc, _flag(exc.field))


def speculative_input(**kwargs):
    """The speculative decoding the flags state, or the flag at fault (deploy, acceptance)."""
    from pydantic import ValidationError

    from inferplan.deploy import Speculative
    from inferplan.shells.pydantic_errors import allowed_by

    try:
        return Speculative(**kwargs)
    except ValidationError as exc:
        first = exc.errors()[0]
        flag = _flag("speculative." + ".".join(str(p) for p in first["loc"]))
        fail(f"{flag}: {first['msg']}", field=flag, allowed=allowed_by(first), detail=first["msg"])


def _flag(field: str | None) -> str | None:
    if field is None or field.startswith("-"):  # older library code names the flag itself
        return field
    return DEPLOY_FLAGS.get(field, f"--{field.replace('_', '-')}")
