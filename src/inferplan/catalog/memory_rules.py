"""Each engine release's memory-budgeting rule, as data (``data/engine_memory_rules.yaml``).

An engine decides how much of a GPU its KV cache gets by a rule that changed between releases:
what counts against the memory fraction, how big a batch the start-up profile runs (and so how
large the activation peak is), whether CUDA-graph memory is reserved before the KV cache is sized,
and whether the cache is cut into whole blocks. A ``MemoryRule`` states one such rule for a range
of releases, with the engine source it was read from; ``memory_rule`` picks the rule of a release.
The arithmetic lives in ``memory/engine_budget.py`` and ``memory/budget_parts.py``; this module only describes and selects.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Literal

from pydantic import Field, model_validator

from inferplan.catalog.context_rules import ComputeGraph, ContextCache
from inferplan.catalog.free_memory import FreeMemoryQuery
from inferplan.catalog.engine_tiers import ReleaseDefaults
from inferplan.catalog.graph_rules import CudaGraphEstimate, ModelRunners
from inferplan.catalog.hybrid_split import HybridStateSplit
from inferplan.catalog.memory_rule_parts import (ActivationProfile, CollectiveBuffers, CurrentRelease, GpuLayerOrder,
                                                 ReleaseFraction)
from inferplan.catalog.mlx_rules import InFlightPrefill
from inferplan.catalog.provenance import RELEASE_NUMBER, release_key
from inferplan.catalog.running_defaults import RunningDefault, running_default_at
from inferplan.catalog.running_requests import ArchitectureRunningRequests, DraftRunningCap
from inferplan.catalog.runtime_buffers import RuntimeBuffers
from inferplan.catalog.schema import SLUG, Frozen, check_engine_and_sources
from inferplan.catalog.startup_rules import AttentionWorkspace, MeasuredSizing, StartupHeadroom
from inferplan.catalog.tp_fractions import ReleaseTpFractions, tp_fractions_at
from inferplan.errors import CatalogError, InvalidScenarioError

# what may count against the engine's memory fraction (or, with no fraction, against the device)
Part = Literal["weights", "activation_peak", "non_torch", "cuda_context", "other_processes", "cuda_graphs"]



def check_release_range(first: str, last: str | None) -> None:
    """A rule's inclusive release range is two release numbers in order (ValueError otherwise)."""
    release_key(first)
    if last is not None and release_key(last) < release_key(first):
        raise ValueError(f"last_release {last} is before first_release {first}")


def in_release_range(release: str, first: str, last: str | None) -> bool:
    """Whether ``release`` is within ``first``..``last`` (None: every later release)."""
    key = release_key(release)
    return release_key(first) <= key and (last is None or key <= release_key(last))


class MemoryRule(Frozen):
    """One engine's memory-budgeting rule over a range of its releases."""

    id: str = Field(pattern=SLUG)
    engine: str  # engines.yaml id
    label: str  # what `fit` prints: "vLLM 0.11-0.20 (V1, CUDA graphs outside the fraction)"
    first_release: str  # inclusive
    last_release: str | None = None  # inclusive; None: every later release
    # a second engine shipped beside the newer one over the same releases (vLLM V0 under
    # VLLM_USE_V1=0); a release with no variant named gets the rule with the newest first_release
    variant: str | None = None
    # the rule planned with when no engine_version is given, for an engine with no sourced current_release
    default: bool = False
    current_release: CurrentRelease | None = None  # the engine's newest known release, inside this rule's range
    # the default memory fraction by release, where the rule's releases change it (else engines.yaml's)
    memory_fraction_defaults: tuple[ReleaseFraction, ...] = ()
    # a fixed fraction by TP size, by release (catalog/tp_fractions.py; else engines.yaml's rule)
    memory_fraction_by_tp: tuple[ReleaseTpFractions, ...] = ()
    # the defaults the releases pick by GPU memory where they change engines.yaml's (SGLang: tiers, graph-batch cap)
    gpu_memory_defaults: ReleaseDefaults | None = None
    # the free-memory figure the releases read on an integrated GPU (catalog/free_memory.py; empty: not stated)
    free_memory_queries: tuple[FreeMemoryQuery, ...] = ()
    max_num_seqs_default: int | None = Field(None, ge=1)  # None: engines.yaml's default
    # the requests the releases run at once without a stated max_num_seqs, by release (catalog/running_defaults.py)
    running_defaults: tuple[RunningDefault, ...] = ()
    budget: Literal["of_total", "of_free_after_weights", "no_fraction"]
    # what an of_total fraction is taken of: the device total, or the memory free when the engine reads it
    # at start-up (SGLang: after the CUDA context and the distributed init, before the weights load)
    fraction_of: Literal["device_total", "free_at_start"] = "device_total"
    start_constant: str | None = None  # calibration.yaml id: memory in use at that read, per GPU
    counted: tuple[Part, ...]  # what counts against the fraction (the KV cache gets the rest)
    activation: ActivationProfile
    # none: no graphs; after_kv: captured after the KV cache is sized (out of the headroom the
    # fraction leaves); estimated: a dummy capture is profiled and its memory counted
    cuda_graphs: Literal["none", "after_kv", "estimated"]
    cuda_graph_constant: str | None = None  # calibration.yaml id, bytes per GPU, when estimated
    # the engine's own estimate by capture count, where it is modelled (the constant stays the fallback)
    cuda_graph_estimate: CudaGraphEstimate | None = None
    # vLLM's model-runner choice by release and model, where Model Runner V2 budgets CUDA graphs otherwise
    model_runners: ModelRunners | None = None
    # calibration.yaml ids (one GPU, several GPUs): the non-torch memory, subtracted when counted
    # and otherwise reported as memory outside the fraction
    non_torch_constants: tuple[str, str] | None = None
    collective_buffers: CollectiveBuffers | None = None  # added to the multi-GPU non-torch memory where it applies
    # the CUDA context and the per-slot vocabulary buffers a runtime holds when it reads the device's free
    # memory (TensorRT-LLM's TensorRT-engine runtime), added to the non-torch memory
    runtime_buffers: RuntimeBuffers | None = None
    block_rounding: Literal["whole_blocks", "none"]
    # an engine that sizes its KV cache by the context, not by the memory left (llama.cpp, MLX)
    context_cache: ContextCache | None = None
    compute_graph: ComputeGraph | None = None  # llama.cpp's compute buffer, in place of `activation`
    gpu_layer_order: GpuLayerOrder | None = None  # llama.cpp's -ngl placement (None: the engine takes no -ngl)
    prefill_working_set: InFlightPrefill | None = None  # MLX's, for an mlx_in_flight activation
    # what must still fit outside the fraction once the KV cache is sized (None: not checked)
    startup: StartupHeadroom | None = None
    measured_sizing: MeasuredSizing | None = None  # the KV cache sized after warm-up from measured memory
    block_tokens: int | None = Field(None, ge=1)  # the releases' default block size (None: engines.yaml's)
    # the attention backend's buffers allocated after the pool, out of the same headroom (None: none)
    attention_workspace: AttentionWorkspace | None = None
    # a hybrid model's cache memory split into recurrent-state slots and an attention KV pool, by release
    hybrid_state_split: tuple[HybridStateSplit, ...] = ()
    # the running requests the releases set themselves with no max_num_seqs stated, by first release
    # (catalog/running_requests.py): with a speculative draft; for an architecture, whether or not a draft runs
    running_requests_with_draft: tuple[DraftRunningCap, ...] = ()
    running_requests_by_architecture: tuple[ArchitectureRunningRequests, ...] = ()
    sources: tuple[str, ...] = Field(min_length=1)
    checked: dt.date
    kind: Literal["spec", "measured", "derived", "assumed"]
    note: str = ""

    @model_validator(mode="after")
    def _consistent(self) -> "MemoryRule":
        check_release_range(self.first_release, self.last_release)
        if "non_torch" in self.counted and self.non_torch_constants is None:
            raise ValueError("counting non_torch memory needs non_torch_constants")
        if self.collective_buffers is not None and "non_torch" not in self.counted:
            raise ValueError("collective_buffers are part of the non_torch memory a rule counts")
        if self.runtime_buffers is not None and "non_torch" not in self.counted:
            raise ValueError("runtime_buffers are part of the non_torch memory a rule counts")
        if (self.cuda_graphs == "estimated") != ("cuda_graphs" in self.counted) or \
                (self.cuda_graphs == "estimated") != (self.cuda_graph_constant is not None):
            raise ValueError("estimated CUDA graphs are counted and name their cuda_graph_constant")
        if self.cuda_graph_estimate is not None and self.cuda_graphs != "estimated":
            raise ValueError("a cuda_graph_estimate belongs to a rule whose CUDA graphs are estimated")
        if self.model_runners is not None and self.cuda_graphs != "estimated":
            raise ValueError("model_runners belong to a rule whose CUDA graphs are estimated")
        if (self.fraction_of == "free_at_start") != (self.start_constant is not None) or \
                (self.fraction_of == "free_at_start" and self.budget != "of_total"):
            raise ValueError("a fraction of the memory free at start-up is an of_total budget naming its start_constant")
        if (self.activation.model == "mlx_in_flight") != (self.prefill_working_set is not None):
            raise ValueError("an mlx_in_flight activation is sized by the rule's prefill_working_set, and only it")
        if ("activation_peak" in self.counted) == (self.activation.model == "outside_fraction"):
            raise ValueError("activation_peak is counted exactly when the activation is not outside the fraction")
        if self.startup and self.startup.sampler_warmup and self.activation.sampler_constant is None:
            raise ValueError("a start-up sampler warm-up is sized by the activation's sampler_constant")
        if self.measured_sizing and (self.startup is not None or self.budget != "of_total"):
            raise ValueError("a measured sizing is an of_total budget with nothing checked after it (no startup)")
        if self.startup and (self.startup.graph_constants is not None) != (self.cuda_graphs == "after_kv"):
            raise ValueError("start-up graph_constants are named exactly when the CUDA graphs are captured after_kv")
        for release in (*(f.first_release for f in (*self.memory_fraction_defaults, *self.memory_fraction_by_tp)),
                        *(q.first_release for q in self.free_memory_queries),
                        *(self.gpu_memory_defaults.first_releases() if self.gpu_memory_defaults else ()),
                        *((r.first_release for r in self.model_runners.defaults) if self.model_runners else ()),
                        *((self.model_runners.v2_estimates_from,) if self.model_runners and
                          self.model_runners.v2_estimates_from else ()),
                        *(h.first_release for h in self.hybrid_state_split),
                        *(r.first_release for r in (*self.running_requests_with_draft,
                                                    *self.running_requests_by_architecture)),
                        *(r.first_release for r in self.running_defaults),
                        *((self.current_release.release,) if self.current_release else ())):
            if not self.covers(release):
                raise ValueError(f"release {release} is outside the rule's releases {self.releases}")
        if self.running_defaults and self.max_num_seqs_default:
            raise ValueError("a rule states its running requests by running_defaults or max_num_seqs_default, not both")
        if self.current_release and self.default:
            raise ValueError("a rule carrying the current_release is the default: drop default: true")
        if self.memory_fraction_by_tp and self.memory_fraction_by_tp[0].first_release != self.first_release:
            raise ValueError("memory_fraction_by_tp starts at the rule's first_release")
        return self

    @property
    def is_default(self) -> bool:
        return self.default or self.current_release is not None

    def default_fraction(self, release: str | None, tp: int, total_bytes: float, pp: int = 1) -> float | None:
        """The fraction this rule's releases default to at ``release`` (None: the rule's first), TP size ``tp``, PP
        size ``pp`` and ``total_bytes`` of GPU memory, where the rule sets one (None: engines.yaml's default applies)."""
        number = parse_engine_version(release)[0] if release else self.first_release
        if self.memory_fraction_by_tp:
            return tp_fractions_at(self.memory_fraction_by_tp, number).fraction(tp, total_bytes, pp)
        key = release_key(number)
        named = [f for f in self.memory_fraction_defaults if release_key(f.first_release) <= key]
        return max(named, key=lambda f: release_key(f.first_release)).value if named else None

    def planned_release(self, release: str | None) -> str | None:
        """The release number an engine_version names (None: the current release, else the rule's open end)."""
        return parse_engine_version(release)[0] if release else getattr(self.current_release, "release", None)

    def running_default(self, release: str | None) -> RunningDefault | None:
        """The requests run at once without a stated max_num_seqs at ``release`` (an engine_version; None: the
        current release, else the newest entry), where the rule states them."""
        return running_default_at(self.running_defaults, self.planned_release(release))

    def free_memory_query(self, release: str | None) -> FreeMemoryQuery | None:
        """What the release reads as free memory on an integrated GPU (None: not stated). ``release`` None: the
        rule's newest entry, the one its open end runs on."""
        key = release_key(parse_engine_version(release)[0]) if release else None
        named = [q for q in self.free_memory_queries if key is None or release_key(q.first_release) <= key]
        return max(named, key=lambda q: release_key(q.first_release)) if named else None

    def covers(self, release: str) -> bool:
        return in_release_range(release, self.first_release, self.last_release)

    @property
    def releases(self) -> str:
        """The release range in words: "0.6.4-0.10.2", "0.11.0 and later"."""
        if self.last_release is None:
            return "every release" if release_key(self.first_release) == (0,) else f"{self.first_release} and later"
        return self.first_release if self.last_release == self.first_release else \
            f"{self.first_release}-{self.last_release}"

    def constant_ids(self) -> tuple[str, ...]:
        a = self.activation
        graph = self.compute_graph.activation_constant if self.compute_graph else None
        nvls = self.collective_buffers.bytes_per_rank_constant if self.collective_buffers else None
        nvls_granularity = self.collective_buffers.granularity_constant if self.collective_buffers else None
        return tuple(c for c in (a.sampler_constant, *(b.sampler_constant for b in a.sampler_backends), a.forward_constant,
                                 self.cuda_graph_constant, graph, self.start_constant,
                                 *(self.non_torch_constants or ()), nvls, nvls_granularity,
                                 *(self.runtime_buffers.constant_ids() if self.runtime_buffers else ()),
                                 *(self.startup.constant_ids() if self.startup else ()),
                                 *((self.model_runners.after_kv_graph_constants or ()) if self.model_runners else ())) if c)


def parse_engine_version(text: str) -> tuple[str, str | None]:
    """The release number and the variant named in an engine_version ("0.8.5", "V0 0.8.5", "0.8.5 v0")."""
    release, variant = None, None
    for token in re.split(r"[\s,;/]+", text.strip()):
        if not token:
            continue
        if re.fullmatch(r"[vV]\d+", token) and variant is None and release is None and "." not in token:
            variant = token.upper()
        elif RELEASE_NUMBER.match(token) and release is None:
            release = token.lstrip("vV")
        elif re.fullmatch(r"[vV]\d+", token) and variant is None:
            variant = token.upper()
        else:
            raise ValueError(f"{text!r} is not a release number")
    if release is None:
        raise ValueError(f"{text!r} names no release number")
    return release, variant


_RELEASE_WORD = re.compile(r"[vV]?\d+(?:\.\d+)+[\w.+-]*|[bB]\d+")  # 0.10.1, v0.10.1rc1, 0.11.0+cu128; b6935
_VARIANT_WORD = re.compile(r"[vV]\d+")


def stated_release(catalog, engine: str, text: str) -> str | None:
    """The engine_version a free-text release names where ``engine``'s memory rules plan it (``read_release``; None:
    none)."""
    return read_release(catalog, engine, text)[0]


def read_release(catalog, engine: str, text: str) -> tuple[str | None, str | None]:
    """The engine_version a free-text release names, as a deployment states it, and None; or None and why not.
    The whole text where ``parse_engine_version`` reads it, else its first release number with the variant it names
    ("V1, v0.10.1" -> "0.10.1 V1"; a Docker tag "vllm/vllm-openai:v0.11.0" -> "0.11.0"; llama-bench's
    "b6935 (a1b2c3d)", llama-server's "version: 6935 (a1b2c3d)" or a bare 6935 -> "b6935" for an engine whose
    releases are builds). Why not: the text names no release ("unstated", a commit alone), or ``memory_rule``'s
    refusal (no rule covers the release, naming the covered ranges; a variant the release does not have)."""
    builds = any(r.first_release.startswith("b") for r in engine_rules(catalog.memory_rules, engine))
    try:
        number, variant = parse_engine_version(text)
    except ValueError:
        words = [w for w in re.split(r"[\s,;/():]+", text) if w]
        number = next((w.lstrip("vV") for w in words if _RELEASE_WORD.fullmatch(w)), None)
        variant = next((w.upper() for w in words if _VARIANT_WORD.fullmatch(w)), None)
        if number is None and builds:
            number = next((w for w in words if w.isdigit()), None)
    if builds and number is not None and number.isdigit():  # llama.cpp: a build number alone
        number = f"b{number}"
    if number is None or not _RELEASE_WORD.fullmatch(number):  # a commit that starts with a digit is no release
        return None, f"names no {engine} release number"
    release = f"{number} {variant}" if variant else number
    try:
        memory_rule(catalog, engine, release)
    except InvalidScenarioError as exc:
        return None, f"{exc} (the memory rules cover {exc.allowed})" if exc.allowed else str(exc)
    return release, None


def current_release(catalog, engine: str) -> CurrentRelease | None:
    """The engine's current release as the catalogue records it (None: none sourced; the newest rule applies)."""
    return next((r.current_release for r in catalog.memory_rules if r.engine == engine and r.current_release), None)


def unversioned_release(catalog, engine: str) -> str | None:
    """The release a measurement planned without its own release number is planned at (current_release's
    records_without_release; None: the engine's default)."""
    current = current_release(catalog, engine)
    return current.records_without_release if current else None


def engine_rules(rules, engine: str) -> list[MemoryRule]:
    """An engine's rules, oldest releases first."""
    return sorted((r for r in rules if r.engine == engine), key=lambda r: release_key(r.first_release))


def allowed_releases(rules, engine: str) -> str:
    return ", ".join(r.releases + (f" {r.variant}" if r.variant else "") for r in engine_rules(rules, engine))


def checked_engine_version(catalog, engine: str, release: str) -> tuple[str, str | None]:
    """``parse_engine_version`` of a stated engine_version, raising InvalidScenarioError (field
    ``engine_version``) for one that names no release number ("latest", "nightly", "main"), with the
    releases ``engine`` has a memory rule for."""
    try:
        return parse_engine_version(release)
    except ValueError as exc:
        raise InvalidScenarioError(f"{exc} (like 0.11.0; a nightly or main build: the release it was cut after)",
                                   field="engine_version", allowed=allowed_releases(catalog.memory_rules, engine)) from None


def memory_rule(catalog, engine: str, release: str | None = None) -> MemoryRule:
    """The rule of ``engine`` at ``release`` (None: the engine's default rule).

    ``release`` is a release number, optionally with the variant it ran ("0.8.5 V0"). Raises
    InvalidScenarioError (field ``engine_version``) for a string that is not one, or a release no
    rule covers, naming the releases that are covered.
    """
    rules = engine_rules(catalog.memory_rules, engine)
    if not rules:
        raise CatalogError(f"no memory rule for engine {engine!r} in engine_memory_rules.yaml", field=engine)
    if release is None:
        return next(r for r in rules if r.is_default)
    allowed = allowed_releases(catalog.memory_rules, engine)
    number, variant = checked_engine_version(catalog, engine, release)
    found = [r for r in rules if r.covers(number)]
    if not found:
        raise InvalidScenarioError(f"no {engine} release {number} has a known memory rule", field="engine_version",
                                   allowed=allowed)
    current = next((r.current_release for r in rules if r.current_release), None)
    if current is not None and release_key(number) > release_key(current.release):
        raise InvalidScenarioError(f"{engine} {number} is newer than {current.release}, the newest release the catalogue "
                                   f"knows (checked {current.checked.isoformat()})", field="engine_version",
                                   allowed=f"{allowed}, up to {current.release}")
    if variant is not None:
        named = [r for r in found if r.variant == variant]
        if not named:
            raise InvalidScenarioError(f"{engine} {number} has no {variant} memory rule", field="engine_version",
                                       allowed=allowed)
        return named[0]
    return max(found, key=lambda r: release_key(r.first_release))


# engines.yaml's memory_fraction_meaning -> the budget of the engine's default rule
_BUDGET_OF_MEANING = {"of_total": "of_total", "of_free_after_weights": "of_free_after_weights", "none": "no_fraction"}


def check_memory_rules(catalog) -> None:
    """Every rule names a known engine, known sources and calibration constants; an engine's ranges
    do not overlap; every engine has exactly one default rule, whose budget is the one engines.yaml's
    memory_fraction_meaning states."""
    for rule in catalog.memory_rules:
        where = f"memory_rules:{rule.id}"
        check_engine_and_sources(catalog, where, rule.id, rule.engine, (
            *rule.sources, *(rule.context_cache.sources if rule.context_cache else ()),
            *(rule.compute_graph.sources if rule.compute_graph else ()), *(rule.startup.sources if rule.startup else ()),
            *(rule.gpu_layer_order.sources if rule.gpu_layer_order else ()),
            *(rule.prefill_working_set.sources if rule.prefill_working_set else ()),
            *(rule.attention_workspace.sources if rule.attention_workspace else ()),
            *(rule.collective_buffers.sources if rule.collective_buffers else ()),
            *(rule.cuda_graph_estimate.sources if rule.cuda_graph_estimate else ()),
            *(s for g in (rule.cuda_graph_estimate.per_graph if rule.cuda_graph_estimate else ()) for s in g.sources),
            *(rule.model_runners.source_ids() if rule.model_runners else ()),
            *(s for b in rule.activation.sampler_backends for s in b.sources),
            *(s for m in rule.activation.moe_buffers for s in m.source_ids()),
            *(rule.current_release.sources if rule.current_release else ()),
            *(s for f in (*rule.memory_fraction_defaults, *rule.memory_fraction_by_tp) for s in f.sources),
            *(s for q in rule.free_memory_queries for s in q.sources),
            *(rule.gpu_memory_defaults.source_ids() if rule.gpu_memory_defaults else ()),
            *(rule.runtime_buffers.source_ids() if rule.runtime_buffers else ()),
            *(rule.measured_sizing.source_ids() if rule.measured_sizing else ()),
            *(s for h in rule.hybrid_state_split for s in h.sources),
            *(s for r in (*rule.running_requests_with_draft, *rule.running_requests_by_architecture) for s in r.sources)))
        block = rule.block_tokens or catalog.engines.records[rule.engine].block_tokens.value
        if (rule.block_rounding == "none") != (block == 1):
            raise CatalogError(f"{where}: block_rounding {rule.block_rounding} disagrees with {rule.engine}'s "
                               f"block_tokens {block:g} in engines.yaml", field=rule.id)
        for accelerator in rule.prefill_working_set.accelerator_ids() if rule.prefill_working_set else ():
            if accelerator not in catalog.accelerators.records:
                raise CatalogError(f"{where}: unknown accelerator {accelerator!r} in prefill_working_set", field=rule.id)
        for constant in rule.constant_ids():
            if constant not in catalog.calibration:
                raise CatalogError(f"{where}: unknown calibration constant {constant!r}", field=rule.id)
        for quant in (q for m in rule.activation.moe_buffers for k in m.kernels for q in k.quantizations):
            if quant not in catalog.quantizations.records:
                raise CatalogError(f"{where}: unknown quantization {quant!r} in moe_buffers", field=rule.id)
        gpu_architectures = {a.architecture for a in catalog.accelerators}
        for name in (a for m in rule.activation.moe_buffers for k in m.kernels for a in k.architectures):
            if name not in gpu_architectures:
                raise CatalogError(f"{where}: unknown GPU architecture {name!r} in moe_buffers", field=rule.id,
                                   allowed=", ".join(sorted(gpu_architectures)))
    for engine in (e.id for e in catalog.engines):
        rules = engine_rules(catalog.memory_rules, engine)
        if sum(r.is_default for r in rules) != 1:
            raise CatalogError(f"memory_rules: engine {engine!r} needs exactly one default rule", field=engine)
        default = next(r for r in rules if r.is_default)
        newest = max(rules, key=lambda r: release_key(r.first_release))
        if default.current_release is None and (default is not newest or default.last_release is not None):
            raise CatalogError(f"memory_rules:{default.id}: the default rule of {engine} is its newest, open-ended one "
                               "unless a rule names the current_release", field=default.id)
        meaning = catalog.engines.records[engine].memory_fraction_meaning
        if _BUDGET_OF_MEANING[meaning] != default.budget:
            raise CatalogError(f"memory_rules:{default.id}: budget {default.budget} disagrees with engines.yaml's "
                               f"memory_fraction_meaning {meaning} for {engine}", field=default.id)
        for a, b in ((a, b) for i, a in enumerate(rules) for b in rules[i + 1:]):
            overlap = a.last_release is None or release_key(a.last_release) >= release_key(b.first_release)
            if overlap and (a.variant == b.variant or a.variant is None or b.variant is None):
                raise CatalogError(f"memory_rules: {a.id} and {b.id} overlap", field=b.id)
