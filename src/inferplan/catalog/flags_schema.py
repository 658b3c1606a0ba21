"""Engine launch flags as data: how each serving engine is started and which of its own argument
names carries each planned setting (``data/engine_flags.yaml``).

A record names the engine's launcher, its container image and health path, one ``FlagRule`` per
setting the engine accepts from the command line, and ``accepted``: every argument name the
engine's parser accepted at the stated version, so a test can check each emitted flag against the
engine's own list. An engine that takes some settings only from a YAML file named on its command
line (TensorRT-LLM's ``--extra_llm_api_options``) has an ``OptionsFile`` (``flag_parts_schema.py``): the key each such setting
is written at, and the top-level keys the engine's option model accepts. A setting in neither is
one the engine's launcher does not take. How the record turns on speculative decoding and prefill/decode
disaggregation is ``launch_modes_schema.py``.
"""

from typing import Literal

from pydantic import Field, model_validator

from inferplan.catalog.flag_parts_schema import (
    LaterFlags, OptionsFile, PlanBound, PromptBudget, RunnerEnv, Setting, SoftwareLaunch, VariantEnv,
)
from inferplan.catalog.launch_modes_schema import DisaggregationRule, ModelCache, SpeculativeRule
from inferplan.catalog.multihost_schema import MultiHostLaunch
from inferplan.catalog.provenance import Bytes, release_order
from inferplan.catalog.schema import SLUG, Frozen
from inferplan.errors import CatalogError, InvalidScenarioError


def _reached(release: str | None, first_release: str | None) -> bool:
    """Whether ``release`` (None: the newest) is ``first_release`` or later (None: every release is)."""
    return not (first_release and release and release_order(release) < release_order(first_release))



class RankScope(Frozen):
    """Under data parallelism, whom a setting's value holds for: each data-parallel rank (``rank``: each runs
    its own scheduler, so the plan's instance total is split over the ranks) or the whole instance. ``copies``
    where the ranks are whole copies of the model, ``attention_dp`` where they run attention data-parallel over
    shared experts (SGLang: --enable-dp-attention; TensorRT-LLM: enable_attention_dp)."""

    copies: Literal["rank", "instance"]
    attention_dp: Literal["rank", "instance"]
    source: str


class FlagRule(Frozen):
    """One setting: the flag(s) that take it and how inferplan's value becomes the engine's."""

    flags: tuple[str, ...] = Field(min_length=1)  # each flag is given the value (llama.cpp: K and V caches)
    switch: bool = False  # a bare flag, emitted when the setting is true
    # a switch's negative form (argparse.BooleanOptionalAction's --no-...), emitted when the setting is stated false
    off_flags: tuple[str, ...] = ()
    value: str | None = None  # the flag always takes this value (llama.cpp --split-mode row for TP)
    value_from: Setting | None = None  # the flag takes another setting's value (SGLang --ep-size = TP size)
    # the flag takes the value times another setting's, when that one is stated (llama.cpp --ctx-size is
    # the context all --parallel slots share: max_model_len × max_num_seqs gives each slot max_model_len)
    multiplied_by: Setting | None = None
    values: dict[str, str] = {}  # inferplan id -> the engine's value; empty: the value as given
    whole_number: bool = False  # the engine parses the value as an integer (argparse type=int)
    # inferplan ids that need no flag: the engine's default ("auto"), or read from the checkpoint
    no_flag: tuple[str, ...] = ()
    # the values the engine's parser accepts where it lists them (argparse choices; empty: any value it parses), and
    # its own default among them: stated, that default is no setting (a run that states it ran as one that states none)
    choices: tuple[str, ...] = ()
    engine_default: str | None = None
    # quantization: the checkpoint precisions a load-time value is made from (bf16, fp16)
    quantize_from: tuple[str, ...] = ()
    # bare switches that turn the setting's feature on, emitted once before its flag (SGLang
    # --enable-hierarchical-cache before --hicache-ratio)
    switches: tuple[str, ...] = ()
    # ``default`` is emitted when this setting is unstated (and ``default_with``, where given, is
    # stated): what the plan assumes, where the engine's own default differs (llama.cpp --parallel 1,
    # --n-gpu-layers 999 where --fit would move layers) or varies by release (vLLM
    # --kv-offloading-backend native with --kv-offloading-size)
    default: str | None = None
    default_with: Setting | None = None
    requires: Setting | None = None  # stated without that setting, the engine refuses it
    # data_parallel_size on SGLang with expert parallelism: the data-parallel ranks are also ranks of this
    # size (attention data parallel across them, the experts spread over all of them), so this size is
    # multiplied by it and ``switches`` are written after; ``folds_with``: only when that setting is set
    folds_into: Setting | None = None
    folds_with: Setting | None = None
    data_parallel: RankScope | None = None  # max_num_seqs: per data-parallel rank or for the instance
    # the earliest engine release the flag exists in, where it is younger than the releases the plan names
    # (a command for an earlier planned release is refused); None: every planned release has it
    first_release: str | None = None
    # the earliest release with ``switches`` where they are younger than the flag (SGLang's
    # --enable-dp-attention from 0.3.6, its --dp-size before it), and the source that shows it
    switches_first_release: str | None = None
    switches_source: str | None = None
    source: str
    note: str | None = None

    def exists_at(self, release: str | None) -> bool:
        """Whether the engine has the flag at ``release`` (None: the newest release): from its ``first_release``."""
        return _reached(release, self.first_release)

    def switches_at(self, release: str | None) -> bool:
        """Whether the engine has the flag and its ``switches`` at ``release`` (None: the newest release)."""
        return self.exists_at(release) and _reached(release, self.switches_first_release)

    @model_validator(mode="after")
    def _default_a_choice(self) -> "FlagRule":
        if self.engine_default is not None and self.choices and self.engine_default not in self.choices:
            raise ValueError(f"engine_default {self.engine_default!r} is not one of choices")
        return self


class EngineFlags(Frozen):
    id: str = Field(pattern=SLUG)  # <engine>-launch
    engine: str  # an engine id from engines.yaml
    version: str  # the engine release or commit the flags were read at (and the releases they were re-read at)
    version_source: str | None = None  # where the releases ``version`` names after the first were re-read
    launcher: tuple[str, ...] = Field(min_length=1)  # argv before the model (vllm serve)
    model_flag: str | None = None  # None: the model is the first positional argument
    model_source: Literal["hf_repo", "gguf_file"] = "hf_repo"
    hf_repo_flag: str | None = None  # gguf_file engines: the flag that fetches REPO:TAG from Hugging Face
    # gguf_file engines: the switch that keeps hf_repo_flag from also loading a repo's multimodal projector,
    # given for a build planned without it (Checkpoint.vision_encoder false)
    text_only_flag: str | None = None
    text_only_source: str | None = None
    # gguf_file engines: quantization id -> llama-quantize type name, the tag of a build whose file the catalogue
    # does not state (Checkpoint.gguf_file) or of a repo as given
    gguf_tags: dict[str, str] = {}
    gguf_tags_source: str | None = None
    launcher_source: str
    settings: dict[Setting, FlagRule] = {}
    plan_bounds: dict[Setting, PlanBound] = {}  # no flag, but a plan's value only bounds the plan
    speculative: SpeculativeRule | None = None
    disaggregation: DisaggregationRule | None = None
    options_file: OptionsFile | None = None
    prompt_budget: PromptBudget | None = None  # a prompt longer than the step budget is refused without chunked prefill
    multi_host: tuple[MultiHostLaunch, ...] = ()  # ways to start one instance over several hosts, newest first
    default_port: int = Field(ge=1, le=65535)
    port_source: str
    images: dict[str, str] = {}  # accelerator vendor -> container image (registry/name:tag)
    image_source: str | None = None
    # accelerator vendor -> the image of one release, "{release}" standing for its number as major.minor.patch
    # (vllm/vllm-openai:v{release}); a vendor missing here has no image per release recorded
    release_images: dict[str, str] = {}
    release_images_source: str | None = None
    # the launcher inside the image when it is not on the image's PATH (llama.cpp: /app/llama-server)
    image_launcher: tuple[str, ...] = ()
    image_launcher_source: str | None = None
    variant_env: tuple[VariantEnv, ...] = ()  # the environment of a variant the release does not run by default
    runner_env: tuple[RunnerEnv, ...] = ()  # the environment that picks a model runner (empty: no choice to make)
    software_launch: tuple[SoftwareLaunch, ...] = ()  # what the launch adds on one software stack
    shm_bytes: Bytes | None = None  # shared memory a container of the engine is given (/dev/shm)
    # a container of more than one GPU (tensor-parallel ranks share tensors through /dev/shm); None: shm_bytes
    shm_bytes_multi_gpu: Bytes | None = None
    # a one-GPU container on a vendor's GPUs where the engine's guide sizes its /dev/shm apart (vendor -> bytes)
    shm_bytes_by_vendor: dict[str, Bytes] = {}
    model_cache: ModelCache | None = None  # where a container downloads the checkpoint (a pod's model cache)
    health_path: str = Field(pattern=r"^/")
    health_source: str
    accepted: tuple[str, ...] = Field(min_length=1)  # every argument name the parser accepts
    accepted_source: str
    accepted_later: tuple[LaterFlags, ...] = ()
    notes: tuple[str, ...] = ()

    def accepts(self) -> frozenset[str]:
        """Every argument name some release of the engine that the record names accepts."""
        return frozenset((*self.accepted, *(f for later in self.accepted_later for f in later.flags)))

    def takes(self, setting: str) -> bool:
        """Whether the launcher takes ``setting`` as a flag or in its options file."""
        return setting in self.settings or (self.options_file is not None and setting in self.options_file.settings)

    def later(self, flag: str) -> LaterFlags | None:
        """The later release a flag needs (None: the ``accepted`` release takes it)."""
        if flag in self.accepted:
            return None
        return next((later for later in self.accepted_later if flag in later.flags), None)

    def launches_split(self, tensor_parallel_size: int, pipeline_parallel_size: int, release: str | None = None,
                       data_parallel_size: int = 1, expert_parallel: bool = False) -> bool:
        """Whether the launcher starts one instance split ``tensor_parallel_size`` × ``pipeline_parallel_size``
        ways at ``release`` (None: the newest), with ``data_parallel_size`` ranks and ``expert_parallel``: a size
        above 1 needs its flag, there from the flag's first release (SGLang's --pp-size from 0.4.6.post2), as do expert
        parallelism (SGLang's --ep-size from 0.4.1) and data-parallel ranks run as attention data parallelism
        (``absent_parallel``); two sizes above 1 need a flag each (llama.cpp's one --split-mode is row or layer,
        not both; mlx_lm.server has neither)."""
        split = [s for s, n in (("tensor_parallel_size", tensor_parallel_size),
                                ("pipeline_parallel_size", pipeline_parallel_size)) if n > 1]
        if any(s not in self.settings or not self.settings[s].exists_at(release) for s in split):
            return False
        if self.absent_parallel(release, data_parallel_size, expert_parallel) is not None:
            return False
        return len(split) < 2 or not set(self.settings[split[0]].flags) & set(self.settings[split[1]].flags)

    def absent_parallel(self, release: str | None, data_parallel_size: int, expert_parallel: bool) -> str | None:
        """The setting whose flag the engine lacks at ``release`` among expert parallelism and data-parallel ranks
        run as attention data parallelism (the data-parallel flag folded into another size, with ``folds_with``
        set where it names one: SGLang's --enable-dp-attention), named as the refusal names it; None: it has them."""
        ep = self.settings.get("enable_expert_parallel")
        if expert_parallel and ep is not None and not ep.exists_at(release):
            return "enable_expert_parallel"
        dp = self.settings.get("data_parallel_size")
        attention_dp = dp is not None and data_parallel_size > 1 and dp.folds_into is not None and (
            dp.folds_with is None or (dp.folds_with == "enable_expert_parallel" and expert_parallel))
        return "data_parallel_size" if attention_dp and not dp.switches_at(release) else None

    def named_flags(self) -> tuple[str, ...]:
        """Every option name this record can emit."""
        named = [f for rule in self.settings.values() for f in (*rule.switches, *rule.flags, *rule.off_flags)]
        named += [f for f in (self.model_flag, self.hf_repo_flag, self.text_only_flag) if f]
        if self.options_file:
            named.append(self.options_file.flag)
        if self.speculative and not self.speculative.options_key:
            spec = self.speculative
            named += [spec.json_flag] if spec.json_flag else [f for fields in (spec.fields, *spec.fields_by_method.values())
                                                              for f in fields]
        if self.disaggregation:
            d = self.disaggregation
            named += [d.json_flag] if d.json_flag else [f for role in d.roles.values() for f in role]
            named += [f for f in d.worker_ports if f.startswith("-")]
        named += [f for launch in self.multi_host for f in launch.engine_flags()]
        named += [a for extra in self.software_launch for a in extra.args if a.startswith("-")]
        return tuple(named)

    def takes_data_parallel(self) -> bool:
        """Whether the launcher takes a data-parallel size (as a flag or in its options file)."""
        return "data_parallel_size" in self.settings or bool(
            self.options_file and "data_parallel_size" in self.options_file.settings)

    @model_validator(mode="after")
    def _flags_accepted(self) -> "EngineFlags":
        cap = self.settings.get("max_num_seqs")
        if self.takes_data_parallel() and cap is not None and cap.data_parallel is None:
            raise ValueError("an engine that takes a data-parallel size must say whether its max_num_seqs flag holds "
                             "per data-parallel rank or for the instance (data_parallel)")
        if set(self.plan_bounds) & set(self.settings):
            raise ValueError("a plan bound is a setting the launcher has no flag for, not one of its settings")
        unknown = sorted(set(self.named_flags()) - self.accepts())
        if unknown:
            raise ValueError(f"flags not in the engine's accepted list: {', '.join(unknown)}")
        options = self.disaggregation.options if self.disaggregation else {}
        if options and (self.options_file is None or set(options) - set(self.options_file.accepted_keys)):
            raise ValueError("disaggregation options are not keys of the engine's options file")
        budget = self.prompt_budget.option.key.split(".")[0] if self.prompt_budget else None
        if budget is not None and (self.options_file is None or budget not in self.options_file.accepted_keys):
            raise ValueError(f"prompt_budget option {budget!r} is not a key of the engine's options file")
        key = self.speculative.options_key if self.speculative else None
        if key is not None and (self.options_file is None or key not in self.options_file.accepted_keys):
            raise ValueError(f"speculative options_key {key!r} is not a key of the engine's options file")
        return self


class GpuResource(Frozen):
    """The Kubernetes extended resource a vendor's device plugin advertises its GPUs as."""

    id: str = Field(pattern=SLUG)  # an accelerator vendor (nvidia, amd ...)
    resource: str  # nvidia.com/gpu
    source: str
    # the environment variable that pins a process to some of a host's GPUs (CUDA_VISIBLE_DEVICES)
    visible_devices_env: str | None = None
    visible_devices_source: str | None = None


def flags_for(catalog, engine_id: str) -> EngineFlags | None:
    """The launch-flag record of an engine (by its id in engines.yaml) in a loaded catalogue, if there is one
    (``catalog`` untyped: the loader imports this module)."""
    return next((flags for flags in catalog.engine_flags if flags.engine == engine_id), None)


def check_choice(catalog, engine_id: str, setting: str, value: object) -> None:
    """Refuse a value of ``setting`` that ``engine_id``'s launcher does not accept (its rule's ``choices``), naming the
    setting and the values it takes."""
    flags = flags_for(catalog, engine_id)
    rule = flags.settings.get(setting) if flags else None
    if value is not None and rule is not None and rule.choices and value not in rule.choices:
        raise InvalidScenarioError(f"{engine_id}'s {', '.join(rule.flags)} takes no value {value!r}", field=setting,
                                   allowed=", ".join(rule.choices))


def as_engine_runs(catalog, engine_id: str, setting: str, value: object) -> object:
    """``value`` of ``setting`` as the engine runs it: None (the engine's default) where it is the engine's own default
    (the rule's ``engine_default``), else ``value``."""
    flags = flags_for(catalog, engine_id)
    rule = flags.settings.get(setting) if flags else None
    return None if rule is not None and rule.engine_default is not None and value == rule.engine_default else value


def check_engine_flags(catalog) -> None:
    """Every flag record of a loaded catalogue names a known engine and known sources."""
    engines = [flags.engine for flags in catalog.engine_flags]
    for flags in catalog.engine_flags:
        if flags.engine not in catalog.engines:
            raise CatalogError(f"engine_flags:{flags.id}: unknown engine {flags.engine!r}", field=flags.id,
                               allowed=", ".join(sorted(catalog.engines.records)))
        if engines.count(flags.engine) > 1:
            raise CatalogError(f"engine_flags:{flags.id}: a second record for {flags.engine}", field=flags.id)
        named = [flags.launcher_source, flags.port_source, *([flags.image_source] if flags.images else []),
                 *([flags.release_images_source] if flags.release_images else []),
                 *([flags.gguf_tags_source] if flags.gguf_tags else []),
                 *([flags.text_only_source] if flags.text_only_flag else []),
                 *([flags.image_launcher_source] if flags.image_launcher else []), flags.health_source, flags.accepted_source,
                 *(r.source for r in flags.settings.values()),
                 *(r.switches_source for r in flags.settings.values() if r.switches_source),
                 *([flags.model_cache.source, flags.model_cache.download_bytes_per_s.source] if flags.model_cache else []),
                 *(r.data_parallel.source for r in flags.settings.values() if r.data_parallel),
                 *(b.source for b in flags.plan_bounds.values()),
                 *(later.source for later in flags.accepted_later), *(v.source for v in flags.variant_env),
                 *(r.source for r in flags.runner_env), *([flags.version_source] if flags.version_source else []),
                 *(o.source for o in flags.software_launch),
                 *(launch.source for launch in flags.multi_host),
                 *((flags.speculative.source,) if flags.speculative else ()),
                 *((flags.disaggregation.source, flags.disaggregation.peer_address.source,
                    *filter(None, [flags.disaggregation.peer_address.router_source, flags.disaggregation.router_source,
                                   flags.disaggregation.router_image_source,
                                   flags.disaggregation.router_startup_timeout_source,
                                   flags.disaggregation.pipeline.source if flags.disaggregation.pipeline else None]))
                   if flags.disaggregation else ()),
                 *((flags.prompt_budget.source, flags.prompt_budget.refusal_source, flags.prompt_budget.option.source,
                    *([flags.prompt_budget.combination_source] if flags.prompt_budget.combination_source else []),
                    *([flags.prompt_budget.chunked_source] if flags.prompt_budget.chunked_source else []))
                   if flags.prompt_budget else ()),
                 *((flags.disaggregation.router_file.source,) if flags.disaggregation and flags.disaggregation.router_file
                   else ()),
                 *((flags.options_file.source, flags.options_file.accepted_source,
                    *(r.source for r in flags.options_file.settings.values()),
                    *(s for r in flags.options_file.moe_backends for s in r.sources)) if flags.options_file else ())]
        for source in named:
            if source not in catalog.sources:
                raise CatalogError(f"engine_flags:{flags.id}: unknown source {source!r}", field=flags.id)
        gpu_architectures = {a.architecture for a in catalog.accelerators}
        for rule in flags.options_file.moe_backends if flags.options_file else ():
            if rule.quantization not in catalog.quantizations or set(rule.backends) - gpu_architectures:
                raise CatalogError(f"engine_flags:{flags.id}: moe_backends names an unknown quantization or GPU "
                                   f"architecture ({rule.quantization}; {', '.join(rule.backends)})", field=flags.id)
    for resource in catalog.gpu_resources:
        if resource.visible_devices_source is not None and resource.visible_devices_source not in catalog.sources:
            raise CatalogError(f"gpu_resources:{resource.id}: unknown source {resource.visible_devices_source!r}",
                               field=resource.id)
        if resource.source not in catalog.sources:
            raise CatalogError(f"gpu_resources:{resource.id}: unknown source {resource.source!r}", field=resource.id)
