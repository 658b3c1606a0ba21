"""What a search returns: ranked deployments, why each family failed, the cost/interactivity front."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, computed_field

from inferplan.search.experts_over_dp import layout_label
from inferplan.search.request import Objective, Targets
from inferplan.search.sim_check import SimulatedCheck


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)


class PoolLayout(_Frozen):
    """One pool of a disaggregated deployment: its role, how many instances, and their layout."""

    role: Literal["prefill", "decode"]
    instances: int
    gpus_per_instance: int
    tensor_parallel_size: int
    pipeline_parallel_size: int
    data_parallel_size: int
    expert_parallel: bool
    speculative_tokens: int  # draft tokens per step (0: none)
    speculative_method: str | None = None  # how drafts are made: mtp (the model's MTP layers) or eagle3 (draft_model)
    draft_model: str | None = None  # the EAGLE-3 draft checkpoint (eagle3_drafts.yaml)

    @computed_field
    @property
    def layout(self) -> str:
        """The pool's instance layout as the table names it (``experts_over_dp.layout_label``)."""
        return layout_label(self.tensor_parallel_size, self.pipeline_parallel_size, self.data_parallel_size,
                            self.expert_parallel, self.gpus_per_instance)


class Deployed(_Frozen):
    """One deployment that meets every stated target, priced."""

    rank: int
    model: str
    system: str | None  # a catalogue system, bought or rented whole
    accelerator: str
    platform: str  # the system id, or "<n>x-<accelerator>": the n GPUs rented in whole instances
    gpus: int  # the engine instances run on, in the whole deployment
    gpus_paid: int  # bought or rented: every GPU of the systems or rented instances taken (at least ``gpus``)
    whole_rack: bool = False  # the system is a rack, priced whole however few of its GPUs run
    gpus_per_instance: int
    systems: int | None  # systems bought (None for bare accelerators and when renting)
    rented_instances: int | None = None  # renting: the listing's instances taken, each a host of its GPUs
    rented_instance_gpus: int | None = None  # renting: GPUs in one rented instance (an engine instance fits in one)
    rental: str | None = None  # renting: the listing compared with (the lower middle of the median)
    rental_basis: str | None = None  # renting: what the price is, e.g. "median of 2 on-demand listings of 8-GPU instances"
    quantization: str
    quantization_label: str  # native, or the fallback compute it runs through
    kv_cache_dtype: str
    engine: str
    tensor_parallel_size: int
    pipeline_parallel_size: int
    data_parallel_size: int
    expert_parallel: bool
    speculative_tokens: int  # draft tokens per step (0: none)
    speculative_method: str | None = None  # how drafts are made: mtp (the model's MTP layers) or eagle3 (draft_model)
    draft_model: str | None = None  # the EAGLE-3 draft checkpoint (eagle3_drafts.yaml)
    replicas: int  # engine instances (aggregated), or the decode pool's instances (separate pools; prefill_instances beside)
    max_num_seqs: int  # running-sequence cap per instance (decode instances when disaggregated), all its DP ranks
    # each data-parallel rank's share of it, rounded up: the figure `deploy --max-num-seqs` and `perf` take
    max_num_seqs_per_rank: int = 0
    max_model_len: int  # the context each instance is planned at: the load's longest request, within the model's own
    longer_request_share: float = 0.0  # the load's requests longer than max_model_len when the model's context cut it
    context_at_mean_request: bool = False  # every request planned at the mean lengths: a longer one is refused
    disaggregated: bool
    prefill_instances: int | None = None
    decode_instances: int | None = None
    pools: tuple[PoolLayout, ...] = ()  # separate pools: the prefill and the decode pool, each its own layout
    kv_transfer_s: float | None = None  # one request's KV cache from prefill to decode instance
    kv_transfer_link: str | None = None
    usd_per_mtok: float
    monthly_usd: float
    capex_usd: float | None  # the purchase price of the systems (None: no price in the catalogue)
    power_w: float | None
    rent_or_buy: Literal["buy", "rent"]
    # buying: where the purchase price comes from (the catalogue's price band, or the user's gpu_price_usd)
    price_basis: str | None = None
    # the queueing approximation's percentiles, which ranked the pick; a simulated pick's own are
    # ``simulated_ttft_p50_s`` … (the figures the table and the web page show, labelled "simulated")
    ttft_p50_s: float
    ttft_p95_s: float
    ttft_p99_s: float
    tpot_p95_s: float
    e2e_p95_s: float
    output_tokens_per_s_per_user: float  # 1 / the mean TPOT: a user's average speed (the p95 is 1 / tpot_p95_s)
    utilisation: float
    users: int | None
    requests_per_s: float
    binding: str  # the stated target (or the utilisation) closest to its limit
    deploy: str  # the launch command
    scenario: dict  # a Users + ROI scenario that loads this pick (model, quantization, engine, platform, cell)
    simulation: SimulatedCheck | None = None  # the simulation's percentiles the pick also met (None: not simulated)
    simulate: dict = {}  # the query `inferplan simulate` (POST /api/simulate) answers with those percentiles
    # other builds of the model that run this deployment the same (same cost, every figure within 0.1 %,
    # ``search/equivalent.py``): one row stands for them, in the better-supported build
    equivalent_quantizations: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @computed_field
    @property
    def layout(self) -> str:
        """One instance's layout as the table names it: "TP2", "DP8 + EP8" (expert parallel), or "TP1 × DP2
        (experts over TP×DP)" (vLLM's data-parallel ranks sharing the experts without expert parallelism);
        separate pools: each pool's."""
        if self.pools:
            return " + ".join(f"{p.role} {p.layout}" for p in self.pools)
        return layout_label(self.tensor_parallel_size, self.pipeline_parallel_size, self.data_parallel_size,
                            self.expert_parallel, self.gpus_per_instance)

    @computed_field
    @property
    def simulated_ttft_p50_s(self) -> float | None:
        """The simulation's TTFT p50 (None: not simulated, so the approximation's ``ttft_p50_s`` stands)."""
        return self.simulation.ttft_p50_s if self.simulation else None

    @computed_field
    @property
    def simulated_ttft_p95_s(self) -> float | None:
        return self.simulation.ttft_p95_s if self.simulation else None

    @computed_field
    @property
    def simulated_ttft_p99_s(self) -> float | None:
        return self.simulation.ttft_p99_s if self.simulation else None

    @computed_field
    @property
    def simulated_tpot_p95_s(self) -> float | None:
        return self.simulation.tpot_p95_s if self.simulation else None

    @computed_field
    @property
    def simulated_e2e_p95_s(self) -> float | None:
        return self.simulation.e2e_p95_s if self.simulation else None


class Infeasible(_Frozen):
    """A family — one model on one platform with one engine and weight format — where nothing works."""

    model: str
    platform: str
    engine: str
    quantization: str
    reason: Literal["memory", "latency", "throughput", "budget", "power", "gpus", "price", "engine"]
    message: str
    # how far the family's best candidate lands from the request's cap or missed target, as a ratio of at
    # least 1 (budget: the least capex over the cap; memory: the memory per GPU one instance on all the platform's GPUs
    # needs over what the engine can use, or start-up's needs over its headroom where that is the larger,
    # ``reasons.memory_shortfall``); families closest to the request are listed first
    shortfall: float | None = None
    fits_in_quantization: str | None = None  # memory, when nothing was found: a smaller format that fits (fit's answer)
    fits_at_max_model_len: int | None = None  # ... at this shorter context (None: at the load's)
    unrented_gpus: int | None = None  # price, renting: the narrowest engine instance no rental listing hosts


class Family(_Frozen):
    model: str
    platform: str
    engine: str
    quantization: str


class ReasonGroup(_Frozen):
    """Families that failed for one and the same reason, in words."""

    reason: str  # as ``Infeasible.reason``
    message: str
    families: tuple[Family, ...]
    shortfall: float | None = None  # the least of its families' (``Infeasible.shortfall``); None: none measured
    fits_in_quantization: str | None = None  # as ``Infeasible``'s: families with another hint are another group
    fits_at_max_model_len: int | None = None


class NextStep(_Frozen):
    """A search to run next: what it does, in words, and the request fields it changes (a field set to
    None is left out; a price of None is yours to state)."""

    text: str
    changes: dict


class InfeasibleSummary(_Frozen):
    """The failed families grouped by reason and, when one cause explains the answer, it and what to search next
    (``answer.py``)."""

    cause: str | None = None  # one sentence that explains the answer (None: no single cause)
    groups: tuple[ReasonGroup, ...] = ()  # by reason (measured first, then most families); within one, nearest first
    next_steps: tuple[NextStep, ...] = ()


class TargetMiss(_Frozen):
    """One service target a near miss misses: what it reaches, the limit, and the relaxed limit that admits it."""

    target: str  # the Targets field, e.g. min_output_tokens_per_s_per_user
    label: str  # as the targets are named in the answer, e.g. "tokens/s per user (p95)"
    value: float  # what the deployment reaches (the queueing approximation's figure)
    limit: float  # the target stated (or applied by default)
    relaxed: float  # the nearest round limit past ``value``: stated instead of ``limit``, it admits the deployment
    miss: float  # |value / limit - 1|: at most the search's near-miss margin


class NearMiss(_Frozen):
    """A deployment cheaper than the top pick (by the objective) that fits every cap and misses only
    service targets, each by at most the near-miss margin (``search/data/defaults.yaml``): the cheapest
    such in its family, re-checked as a pick is against the relaxed targets."""

    model: str
    platform: str  # as a pick's: the system id, or "<n>x-<accelerator>" rented
    accelerator: str
    engine: str
    quantization: str
    layout: str  # one instance's layout, as a pick's (separate pools: the decode pool's)
    gpus: int  # the engine instances run on, both pools' when separate
    gpus_paid: int
    replicas: int  # engine instances (separate pools: the decode pool's)
    rent_or_buy: Literal["buy", "rent"]
    monthly_usd: float
    usd_per_mtok: float
    capex_usd: float | None
    misses: tuple[TargetMiss, ...]
    relaxed_targets: Targets  # the search's targets with each missed one relaxed: a search with them admits it
    times_cheaper: float | None  # the top pick's objective figure over this one's (None: no pick met the targets)


class ParetoPoint(_Frozen):
    usd_per_mtok: float
    output_tokens_per_s_per_user: float
    platform: str
    engine: str
    quantization: str
    gpus: int  # the engine instances run on
    gpus_paid: int  # bought or rented (whole systems or whole rented instances)
    systems: int | None  # systems bought (None: rented instances)
    whole_rack: bool  # a rack system, priced whole
    disaggregated: bool


class ApiAlternative(_Frozen):
    id: str
    provider: str
    usd_per_mtok: float  # blended over the load's input and output tokens
    monthly_usd: float


class LoadSummary(_Frozen):
    request_rate_per_s: float
    input_len: int
    output_len: int
    monthly_tokens: float
    users: int | None
    workload: str | None
    trace: str | None = None  # the trace replayed (its file, or how many rows were given inline), when the load is one
    arrival: str = "poisson"  # poisson | bursty | trace
    peak_to_average: float = 1.0  # bursty: the busy spells' rate over the mean
    burst_period_s: float | None = None  # bursty: mean seconds of one busy and one quiet spell
    input_tokens_scv: float = 0.0  # spread of prompt lengths (a trace's own)
    output_tokens_scv: float = 0.0
    lengths: str = "lognormal"  # how spread lengths are drawn: lognormal | uniform
    prefix_cache_hit_rate: float = 0.0  # share of prompt tokens taken as served from the prefix cache
    longest_request_tokens: int = 0  # the prompt plus output a cell is asked to hold (spread lengths: each at its
    # 99.9th percentile; a trace: its longest); a pick's max_model_len stops at its model's own context


class SearchResult(_Frozen):
    objective: Objective
    targets: Targets
    load: LoadSummary
    results: tuple[Deployed, ...]
    infeasible: tuple[Infeasible, ...]
    infeasible_summary: InfeasibleSummary = InfeasibleSummary()  # the same families grouped by reason, and the cause
    # cheaper deployments that miss only service targets, each by at most the near-miss margin, cheapest first
    near_misses: tuple[NearMiss, ...] = ()
    near_miss_margin: float = 0.0  # how far past a target a near miss may land (search/data/defaults.yaml)
    pareto: tuple[ParetoPoint, ...]
    api: tuple[ApiAlternative, ...]
    candidates: int  # deployments priced and checked against the targets
    cells: int  # distinct engine instances whose memory and speed were modelled
    elapsed_s: float
    notes: tuple[str, ...] = ()
