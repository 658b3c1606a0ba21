"""The hardware a deployment names: its accelerator, how many, and the links between them.

A system (``--system hgx-h100``) fixes the accelerator, its count, its scale-up domain and its
network; a bare accelerator (``--gpu h100``) takes the accelerator's own link and the network
servers built on it usually carry.
"""

from __future__ import annotations

from dataclasses import dataclass

from inferplan.catalog.loader import Catalog
from inferplan.catalog.memory_config import configuration_names
from inferplan.catalog.ollama import OLLAMA, NamedBuild, build_line, named_build
from inferplan.catalog.schema import Accelerator, ScaleOut, System
from inferplan.errors import CatalogError, InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.engine_budget import device_total_bytes
from inferplan.memory.resolve import resolve_model
from inferplan.memory.vision_projector import vision_projector_bytes
from inferplan.units import GiB, fmt_gb, to_gbit_per_s


@dataclass(frozen=True)
class Hardware:
    accel: Accelerator
    gpus: int
    domain_gpus: int  # GPUs that reach each other over the accelerator's scale-up link
    scale_out: ScaleOut | None  # the network beyond that domain (the system's, else the usual one of the accelerator)
    system: System | None = None
    assumptions: tuple[str, ...] = ()
    # GPUs one server of PCIe cards holds: past a bridge or switch domain they still share PCIe
    # (0: not a PCIe card, or a system that states its own layout)
    pcie_server_gpus: int = 0


PCIE_FORM_FACTORS = ("pcie", "workstation", "consumer")
PCIE_SERVER_GPUS = 8  # assumed: the usual largest PCIe GPU server (8 double-width cards)


def configuration_note(hw: Hardware) -> str | None:
    """Which memory configuration a part sold in several is planned at where the name stated no size: the
    catalogue record's, its largest (None: a sized name, a system's part, or a part sold in one size)."""
    accel = hw.accel
    if hw.system is not None or not accel.memory_configurable:
        return None
    return (f"{accel.name}: planned at its largest configuration, {fmt_gb(accel.memory_bytes.value, 'g')} "
            f"(name another size: {configuration_names(accel)})")


def system_domain_gpus(system: System, accel: Accelerator) -> int:
    """GPUs of ``system`` that talk over the accelerator's scale-up link: its fast-link domain,
    or every GPU in the box when they share PCIe (no fast link)."""
    if system.scale_up_domain_gpus > 1 or accel.scale_up is None or accel.scale_up.link == "none":
        return system.scale_up_domain_gpus
    return system.accelerator_count


def system_scale_out(system: System, accel: Accelerator) -> ScaleOut | None:
    """The network between ``system``s: its own, else the accelerator's usual one (None: not known)."""
    return system.scale_out or accel.scale_out


def default_engine(catalog: Catalog, accel: Accelerator) -> str:
    """The engine ``accel``'s software stack runs when none is named (engines.yaml ``default_on``)."""
    named = next((e.id for e in catalog.engines if accel.software in e.default_on), None)
    if named is None:
        raise CatalogError(f"no engine is the default on {accel.software.value}", field="engines.yaml default_on",
                           allowed="one engine per software stack")
    return named


def with_default_engine(d: Deployment, catalog: Catalog) -> Deployment:
    """``d`` with the engine and weight format its model's Ollama tag selects where it states neither
    (``with_named_build``), else with the engine its hardware runs by default where it names none. A named engine
    is looked up first, so a front end (Ollama) is refused offering the model's own tags."""
    if "engine" in d.model_fields_set:
        catalog.engine(d.engine, model=d.model)
    named = named_build(catalog, d.model)
    if named is not None:
        d = with_named_build(d, named, catalog)
    if "engine" in d.model_fields_set or not (d.gpu or d.system):
        return d
    engine = default_engine(catalog, resolve_hardware(catalog, d).accel)
    return d if engine == d.engine else d.model_copy(update={"engine": engine})


def resolve_hardware(catalog: Catalog, d: Deployment) -> Hardware:
    if d.system:
        system = catalog.system(d.system, "system")
        accel = catalog.accelerators.records[system.accelerator]
        if d.gpu and catalog.accelerator(d.gpu).id != accel.id:
            raise InvalidScenarioError(
                f"{system.name} holds {accel.name}, not {d.gpu}", field="gpu", allowed=accel.id
            )
        gpus = d.gpus or system.accelerator_count
        count = system.accelerator_count
        if gpus > count and gpus % count:
            raise InvalidScenarioError(
                f"{system.name} has {count} GPUs; {gpus} GPUs is neither a part of one nor a whole number of them",
                field="gpus",
                allowed=f"1..{count} or a multiple of {count} (several {system.id} joined by their network)",
            )
        out = system_scale_out(system, accel)
        notes = ()
        if gpus > count:
            net = f"{out.link} ({to_gbit_per_s(out.bandwidth_bytes_per_s.value):.0f} Gb/s per GPU)" if out else "a network the catalogue does not know"
            notes = (f"{gpus // count}× {system.name} joined by {net}",)
        return Hardware(accel, gpus, system_domain_gpus(system, accel), out, system, notes)
    accel = catalog.accelerator(d.gpu or "")
    instance = d.tensor_parallel_size * d.pipeline_parallel_size
    gpus = d.gpus or instance * (d.data_parallel_size or 1)
    domain = accel.scale_up.max_domain_gpus if accel.scale_up else 1
    pcie_server = PCIE_SERVER_GPUS if accel.form_factor in PCIE_FORM_FACTORS and accel.scale_up else 0
    return Hardware(accel, gpus, domain, accel.scale_out, pcie_server_gpus=pcie_server)


def with_named_build(d: Deployment, named: NamedBuild, catalog: Catalog) -> Deployment:
    """``d`` planned as the build an Ollama tag selects (catalog/ollama.py): its engine where none is stated and
    the stated weight format (if any) is one it loads; its weight format where none is stated and the engine
    planned (stated or the tag's) loads it; and, run so, the context Ollama gives the model where none is stated
    (``ollama_context_tokens``). A stated engine, weight format or context wins."""
    update: dict[str, object] = {}
    stated = catalog.quantization(d.quantization) if d.quantization is not None else None
    if "engine" not in d.model_fields_set and (stated is None or catalog.engine(named.engine).loads(stated)):
        update["engine"] = named.engine
    planned = catalog.engine(update.get("engine", d.engine))
    if d.quantization is None and "engine" in (d.model_fields_set | update.keys()) and \
            planned.loads(catalog.quantizations.records[named.quantization]):
        update["quantization"] = named.quantization
    d = d.model_copy(update=update) if update else d
    if d.max_model_len is None and _runs_named(d, named) and (d.gpu or d.system):
        d = d.model_copy(update={"max_model_len": ollama_context_tokens(catalog, d)})
    return d


def ollama_context_tokens(catalog: Catalog, d: Deployment) -> int:
    """The context Ollama gives ``d``'s model with no num_ctx set: its tier for the VRAM of the GPUs planned (each
    GPU's total as the driver reports it; all the GPUs given where Ollama loads the model on fewer, as it sees them
    all), capped at the model's context (ollama.yaml)."""
    hw = resolve_hardware(catalog, d)
    per_gpu, _ = device_total_bytes(catalog, hw.accel, catalog.engine(d.engine), d.wired_limit_mb)
    return catalog.ollama_runners.records[OLLAMA].default_context_tokens(
        per_gpu * (d.gpus_given or hw.gpus), resolve_model(catalog, d.model).context_tokens)


def ollama_default_context(catalog: Catalog, d: Deployment) -> bool:
    """Whether ``d`` (as planned, after ``with_default_engine``) runs an Ollama tag's build at the context Ollama
    gives the model with no num_ctx set, rather than at one a person stated."""
    named = named_build(catalog, d.model)
    return named is not None and _runs_named(d, named) and bool(d.gpu or d.system) and \
        d.max_model_len == ollama_context_tokens(catalog, d)


def build_note(catalog: Catalog, d: Deployment) -> str | None:
    """One line saying which build the Ollama tag naming ``d``'s model selected and how the plan runs it, unlike
    Ollama where it does (``d`` as planned, after ``with_default_engine``); None: the model is named otherwise."""
    named = named_build(catalog, d.model)
    if named is None:
        return None
    if _runs_named(d, named):
        if not (d.gpu or d.system) or d.max_model_len is None:
            return f"{build_line(catalog, named)}; a stated engine or quantization plans another"
        tokens = ollama_context_tokens(catalog, d)
        context = "the context Ollama gives it on these GPUs" if d.max_model_len == tokens else \
            f"not the {tokens:,} Ollama gives it on these GPUs"
        return (f"{build_line(catalog, named)}, at {d.max_model_len:,} tokens, {context}, {_unlike_ollama(catalog, d, named)}; "
                "a stated engine, quantization or context plans another")
    quant = catalog.quantizations.records[named.quantization].name
    engine = catalog.engines.records[named.engine].name
    planned = d.quantization or "the engine's own build"
    return f"{named.tag} names Ollama's {quant} build on {engine}; planned as stated: {d.engine}, {planned}"


def runs_named_build(catalog: Catalog, d: Deployment) -> NamedBuild | None:
    """The Ollama tag's build ``d`` (after ``with_default_engine``) runs on named GPUs (None: it runs another build,
    or names no tag or GPUs)."""
    named = named_build(catalog, d.model)
    return named if named is not None and _runs_named(d, named) and bool(d.gpu or d.system) else None


def runs_ollama_tag(catalog: Catalog, d: Deployment) -> bool:
    """Whether ``d`` (as planned, after ``with_default_engine``) runs an Ollama tag's build as Ollama starts it."""
    named = named_build(catalog, d.model)
    return named is not None and _runs_named(d, named)


def _runs_named(d: Deployment, named: NamedBuild) -> bool:
    """Whether ``d`` runs the build ``named`` selects: its engine and weight format."""
    return (d.engine, d.quantization) == (named.engine, named.quantization)


def _unlike_ollama(catalog: Catalog, d: Deployment, named: NamedBuild) -> str:
    """How the plan of an Ollama tag's build places its layers and how it runs it where Ollama does not. Ollama states
    no --n-gpu-layers, so llama-server's --fit places them (memory/fit_placement.py, ollama.yaml ``placement``): the
    plan says where it did, the layers stated where a person states them, else that no placement --fit tries fits
    and every layer is planned on the GPU. It plans the text model alone, where Ollama also loads the model's vision
    projector (ollama.yaml), unless the tag states the projector's size, which the plan then counts on the
    GPU (memory/vision_projector.py)."""
    rule = catalog.ollama_runners.records[OLLAMA].placement
    margin = f"a {rule.margin_bytes.value / GiB:g} GiB margin kept free on each GPU" if rule else "a margin kept free on each GPU"
    if d.placement_chosen_by and d.n_gpu_layers is None and d.n_cpu_moe is None:
        layers = f"with every layer on the GPU, where {d.placement_chosen_by} keeps them ({margin})"
    elif d.placement_chosen_by:
        layers = f"with the layers where {d.placement_chosen_by} places them, Ollama stating no --n-gpu-layers ({margin})"
    elif d.n_gpu_layers is not None or d.n_cpu_moe is not None:
        layers = "with the layers stated on the GPU"
    elif resolve_hardware(catalog, d).accel.unified_memory:
        layers = "with every layer on the GPU, whose memory is the host RAM too"
    else:
        layers = (f"with every layer on the GPU, where Ollama leaves their placement to llama-server's --fit ({margin}, "
                  "layers moved to host RAM where it is short)")
    if not named.vision_projector:
        return layers
    if named.vision_projector_bytes and not vision_projector_bytes(catalog, d):
        return f"{layers}; the vision projector on the CPU, where Ollama runs it with text layers in host RAM"
    if named.vision_projector_bytes:
        return f"{layers}; the vision projector Ollama loads on the GPU counted there"
    return f"{layers}; text only, where Ollama also loads the vision projector on the GPU"
