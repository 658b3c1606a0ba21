"""Each pick as a launch command and as a Users + ROI scenario."""

from __future__ import annotations

from dataclasses import dataclass

from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.catalog.ollama import named_build
from inferplan.deploy.command import Speculative, launch_command
from inferplan.deploy.pools import pools_launch
from inferplan.deploy.pools_plan import prefill_deployment
from inferplan.economics.plan import PlanResult
from inferplan.economics.scenario import Scenario
from inferplan.economics.sizing import cell_deployment
from inferplan.errors import InferplanError
from inferplan.inputs.deployment import Deployment
from inferplan.search.evaluate import workload
from inferplan.search.load import ResolvedLoad
from inferplan.search.request import Targets
from inferplan.search.sim_check import CHECK_REQUESTS, CHECK_SEED
from inferplan.search.space import Cell


# a request rate or a trace is planned as this many equal users sharing its tokens, so the Users + ROI
# simulator, which counts whole users, counts the load in 0.1 % steps
RATE_LOAD_USERS = 1000


@dataclass(frozen=True)
class LaunchText:
    """A pick's launch script and the notes that go with it (the router, the copies, a placeholder file)."""

    text: str
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class LaunchLayout:
    """What a launch takes of a sized replica cell (a search's ``Cell``, the cell ``plan`` sized): its GPUs and
    parallel layout, its drafts, and the GPUs of the system it runs on (None: bare GPUs)."""

    gpus: int
    tensor_parallel_size: int
    pipeline_parallel_size: int
    data_parallel_size: int
    expert_parallel: bool
    speculative: Speculative | None = None
    system_gpus: int | None = None


def cell_layout(cell: Cell) -> LaunchLayout:
    """A search cell's launch layout."""
    system = cell.platform.system
    return LaunchLayout(
        cell.gpus, cell.tensor_parallel_size, cell.pipeline_parallel_size, cell.data_parallel_size, cell.expert_parallel,
        Speculative(method=cell.speculative_method, tokens=cell.speculative_tokens, draft_model=cell.draft_model)
        if cell.speculative_tokens else None, system.accelerator_count if system is not None else None)


def launch_text(catalog: Catalog, d: Deployment, cell: Cell | LaunchLayout, *, replicas: int = 1,
                prefill: tuple[Deployment, Cell | LaunchLayout, int] | None = None, decode_instances: int = 1,
                host_gpus: int | None = None) -> LaunchText:
    """The command that starts one of the ``replicas`` instances (``deploy.launch_command``); with separate
    pools (``prefill``: the prefill instances' own deployment, cell and count), every prefill and decode
    worker pinned to its own GPUs and port on its host, and the router (``deploy.pools_launch``);
    ``host_gpus``: the GPUs one host has (a rented instance's; default the cell's system's). A setting the
    engine's flags cannot express is said in words instead of a command."""
    layout = cell if isinstance(cell, LaunchLayout) else cell_layout(cell)
    try:
        if prefill is not None:  # the prefill instance as `deploy --prefill-instances` derives it from the decode's
            _, pre_cell, pre_instances = prefill
            pre_layout = pre_cell if isinstance(pre_cell, LaunchLayout) else cell_layout(pre_cell)
            pre = prefill_deployment(d, tensor_parallel_size=pre_layout.tensor_parallel_size,
                                     pipeline_parallel_size=pre_layout.pipeline_parallel_size,
                                     data_parallel_size=pre_layout.data_parallel_size,
                                     enable_expert_parallel=pre_layout.expert_parallel)
            pools = pools_launch(catalog, pre, d, prefill_instances=pre_instances, decode_instances=decode_instances,
                                 prefill_speculative=pre_layout.speculative, decode_speculative=layout.speculative,
                                 host_gpus=host_gpus or layout.system_gpus)
            return LaunchText(pools.script, pools.notes)
        copies = d.model_copy(update={"gpus": layout.gpus * replicas}) if replicas > 1 and d.system is None else d
        command = launch_command(copies, catalog, speculative=layout.speculative)
        return LaunchText(command.script, command.notes)
    except InferplanError as exc:
        return LaunchText(f"no launch command: {exc.describe()}")


def plan_launch(catalog: Catalog | None, s: Scenario, r: PlanResult) -> LaunchText:
    """The launch command of the replica cell ``plan`` sized (``economics.sizing.cell_deployment``), written as
    ``search --deploy`` writes a pick's (``launch_text``): one of the replica cells the plan runs (its loadouts'
    cells, or the ones the scenario states; rented on another machine than the owned loadout, the rented cells), and
    with a prefill pool both pools and their router."""
    catalog = catalog or load_catalog()
    rented = r.users_on_rented_cells and r.rented_cell is not None  # rented on another machine: a rented cell
    c = r.rented_cell if rented else r.capacity.cell
    spans = not rented and r.systems_per_cell > 1 and s.platform.system is not None
    d = cell_deployment(catalog, s, r.accelerator, r.workload, c, system=s.platform.system if spans else None)
    spec = s.speculative
    drafts = Speculative(method=spec.planned_method, tokens=spec.tokens, draft_model=spec.draft_model) if spec else None
    system_gpus = r.rented_instance_gpus or r.gpus_per_system  # a host's GPUs: a rented instance's, else a loadout's
    layout = LaunchLayout(c.gpus, c.tensor_parallel_size, c.pipeline_parallel_size, c.data_parallel_size,
                          c.expert_parallel, drafts, system_gpus)
    cells = r.rented_cells if rented else r.stated_replicas or r.loadouts * r.capacity.cells
    pool = s.prefill_pool
    prefill = None if pool is None else (d, LaunchLayout(
        pool.cell.gpus, pool.cell.tensor_parallel_size, pool.cell.pipeline_parallel_size, pool.cell.data_parallel_size,
        pool.cell.enable_expert_parallel, drafts, system_gpus), pool.instances)
    return launch_text(catalog, d, layout, replicas=cells, prefill=prefill, decode_instances=cells)


def named_by_tag(catalog: Catalog, d: Deployment, names: tuple[str, ...]) -> Deployment:
    """``d`` named by the Ollama tag among ``names`` (the models a search was asked for) whose build it runs — the
    tag's model, engine and weight format — so its launch is Ollama's (``deploy.ollama_launch``); else ``d``."""
    for name in names:
        named = named_build(catalog, name)
        if named is not None and named.model == d.model and named.run_by(d.engine, d.quantization):
            return d.model_copy(update={"model": name})
    return d


def _layout(cell: Cell) -> dict:
    return {"tensor_parallel_size": cell.tensor_parallel_size, "pipeline_parallel_size": cell.pipeline_parallel_size,
            "data_parallel_size": cell.data_parallel_size, "enable_expert_parallel": cell.expert_parallel}


def scenario_dict(cell: Cell, rl: ResolvedLoad, targets: Targets, *, replicas: int, rented: bool,
                  speed_per_user: float, max_num_seqs: int, prefill: tuple[Cell, int] | None = None,
                  instance_gpus: int | None = None, quote_usd: float | None = None) -> dict:
    """A scenario (scenario.py) the Users + ROI simulator plans this pick with: this model, format, engine,
    platform and replica cell started with the pick's running cap per rank (``max_num_seqs``), its ``replicas``
    (for separate pools the decode pool's, with ``prefill`` — the prefill cell and its instances — as its
    ``prefill_pool``), rented or bought, at the search's load and
    per-user speed. A system's GPUs rented on hosts of fewer GPUs (``instance_gpus``: a rented instance's, or a
    rented set's where one NVLink domain spans it) are that many of its accelerator, as the pick's label names
    them, not the whole system; a rented set as wide as the system is the system. Users with a preset keep the
    preset with the search's prefix-cache share and speed target; a request rate or a trace is
    ``RATE_LOAD_USERS`` equal users sharing its month of tokens, at the load's mean lengths. The speed is
    the search's target (mean tokens/s per user, or 1 / its TPOT p95), else ``speed_per_user``, the pick's own.
    ``quote_usd``: the user's price of a bare platform's N GPUs, its ``quote_usd_per_system``."""
    p = cell.platform
    part = rented and p.system is not None and instance_gpus is not None and instance_gpus < p.gpus
    platform = ({"system": p.system.id} if p.system and not part
                else {"gpu": p.accelerator.id, "gpus": instance_gpus if part else p.gpus})
    if quote_usd is not None and p.system is None:
        platform["quote_usd_per_system"] = quote_usd
    s = {
        "model": cell.model, "quantization": cell.quantization, "engine": cell.engine,
        "kv_cache_dtype": cell.kv_cache_dtype, "platform": platform,
        "cell": {**_layout(cell), "max_num_seqs": max_num_seqs}, "replicas": replicas,
    }
    if prefill is not None:
        s["prefill_pool"] = {"instances": prefill[1], "cell": _layout(prefill[0])}
    if rented:
        s["rented"] = True
    if cell.speculative_tokens:
        # no rate: the plan resolves it as the search priced it (the draft's published one, else the default)
        s["speculative"] = {"tokens": cell.speculative_tokens,
                            **({"method": cell.speculative_method} if cell.speculative_method else {}),
                            **({"draft_model": cell.draft_model} if cell.draft_model else {})}
    speed = (targets.min_output_tokens_per_s_per_user
             or (1 / targets.tpot_p95_s if targets.tpot_p95_s else None) or speed_per_user)
    if rl.users is not None and rl.workload is not None:
        s["target_users"] = rl.users
        s["workload"] = {"preset": rl.workload.preset, "cache_hit_rate": rl.cache_hit_rate,
                         "target_output_tokens_per_s": speed}
    else:
        s["target_users"] = RATE_LOAD_USERS
        s["workload"] = {"monthly_tokens": rl.monthly_tokens / RATE_LOAD_USERS, "output_share": rl.output_len / (rl.input_len + rl.output_len),
                         "peak_to_average": 1.0, "cache_hit_rate": rl.cache_hit_rate, "target_output_tokens_per_s": speed,
                         "input_tokens_per_request": rl.input_len, "output_tokens_per_request": rl.output_len}
    return s


def simulate_query(d: Deployment, cell: Cell, rl: ResolvedLoad, *, instances: int,
                   prefill: tuple[Cell, int] | None = None) -> dict:
    """The question ``inferplan simulate`` (``POST /api/simulate``, ``simulation.SimulationQuery``) answers with
    this pick's simulated percentiles: ``d`` (one instance, its running cap per rank and its context) on the pick's
    system, or on its accelerators where it has none or its pools take more than one system holds, ``instances``
    of it (with ``prefill``: the decode instances behind that prefill cell's instances), under the search's load,
    at the check's request count and seed. A trace is given beside it, as it was to the search."""
    p = cell.platform
    pools_gpus = cell.gpus * instances + (prefill[0].gpus * prefill[1] if prefill else 0)
    on_system = p.system is not None and (prefill is None or pools_gpus <= p.system.accelerator_count)
    where = {"system": p.system.id} if on_system else {"gpu": p.accelerator.id}
    deployment = {**d.model_dump(mode="json", exclude_none=True, exclude={"system", "gpu"}), **where}
    load = rl.load
    shape = {"prefix_cache_hit_rate", "speculative_tokens", "acceptance_rate"}  # a trace brings its lengths
    w = workload(cell, rl).model_dump(mode="json", exclude_defaults=True,
                                      include=shape if load.arrival == "trace" else shape | {"input_len", "output_len"})
    q: dict = {"deployment": deployment, "workload": w, "requests": CHECK_REQUESTS, "seed": CHECK_SEED, "replicas": instances}
    if load.arrival != "trace":
        q.update(input_tokens_scv=load.input_tokens_scv, output_tokens_scv=load.output_tokens_scv, lengths=load.lengths)
    if load.arrival == "closed":
        q["clients"] = load.clients
    elif load.arrival != "trace":
        q.update(request_rate_per_s=load.request_rate_per_s, arrival=load.arrival, peak_to_average=load.peak_to_average,
                 burst_period_s=load.burst_period_s)
    if prefill is not None:
        q.update(prefill_instances=prefill[1], prefill_tensor_parallel_size=prefill[0].tensor_parallel_size)
    return q
