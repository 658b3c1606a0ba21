"""Which MoE kernel an engine release runs a quantized expert format with, as data
(``data/engine_moe_kernels.yaml``).

vLLM runs MXFP4 experts on GPUs without native MXFP4 with Marlin or with OpenAI's Triton kernels; the
choice follows the GPU generation and whether the install carries ``triton_kernels``, and the two
allocate the experts differently (Marlin pads every matrix to its tile multiples, the Triton path
keeps a second copy of the block scales). A ``MoeKernel`` states one kernel's layout; a
``MoeKernelRule`` states which kernel a range of releases picks on which architectures with its
default pip install. ``moe_kernel`` selects; the bytes are computed in ``memory/moe_layout.py``.
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import Field

from inferplan.catalog.memory_rules import parse_engine_version, release_key
from inferplan.catalog.schema import SLUG, Frozen, check_engine_and_sources
from inferplan.errors import CatalogError, InvalidScenarioError


class MoeKernel(Frozen):
    """One kernel's weight layout for an expert format."""

    id: str = Field(pattern=SLUG)
    engine: str  # engines.yaml id
    native_format: str  # quantizations.yaml native_format of the experts it runs
    name: str
    hidden_multiple: int = Field(ge=1)  # each expert matrix's hidden dimension is rounded up to this
    intermediate_multiple: int = Field(ge=1)  # and its tensor-parallel share of the intermediate size to this
    extra_scale_copies_constant: str | None = None  # calibration.yaml id: block scales held again
    sources: tuple[str, ...] = Field(min_length=1)
    checked: dt.date
    kind: Literal["spec", "measured", "derived", "assumed"]
    note: str = ""


class SharedWorkspaceRequest(Frozen):
    """Another request the model's layers make of the same persistent workspace in the start-up profile's
    dummy run; the buffer kept is the largest request. ``shapes``: ``deepseek_v4_prefill_gather`` asks
    ``rows`` x (ceil(context / CSA ratio) + window + batched tokens) x head_dim elements, with, from
    ``index_table_from``, two int32 tables per batched token (round_up(index top-k + window, 128) entries
    and one); ``deepseek_v4_indexer_gather`` asks the CSA indexer's key gather of ``rows`` x context / CSA
    ratio keys (index_head_dim elements and a 4-byte scale each) and ``extra_bytes``."""

    shapes: Literal["deepseek_v4_prefill_gather", "deepseek_v4_indexer_gather"]
    rows: int = Field(ge=1)  # prefill gather: requests gathered at once; indexer: buffer tokens per context token
    element_bytes: float = Field(gt=0)  # bf16: 2; FP8 keys: 1
    extra_bytes: int = Field(default=0, ge=0)  # a fixed piece of the same request (the radix top-k workspace)
    index_table_from: str | None = None  # the first release whose request adds the int32 index tables
    sources: tuple[str, ...] = Field(min_length=1)
    checked: dt.date
    kind: Literal["spec", "measured", "derived", "assumed"]
    note: str = ""


class MoeWorkspace(Frozen):
    """The scratch buffers a kernel's experts take in a forward pass where the engine keeps them after its
    start-up profile (vLLM's modular MoE kernel holds them in one persistent workspace): counted on top of
    the profile's sampler pass. ``shapes`` names the kernel's workspace_shapes: ``marlin`` holds
    tokens x top-k x (max(I, H) + max(2I, H)) elements (I: an expert's intermediate share on the GPU, H: the
    hidden size, both after the kernel's padding); ``humming`` holds tokens x max(H, top-k x I, H x e) + tokens
    x top-k x max(H, gI) elements, e the top-k under expert parallelism (its grouped GEMM) and 1 otherwise
    (its indexed GEMM), g the gate/up rows per intermediate row (2 gated, 1 plain). ``data_parallel_gather``:
    the engine's default dispatch hands the kernel the tokens of every data-parallel rank, so the profile's
    batch is DP x its own (and without expert parallelism the experts' tensor-parallel group spans TP x DP
    GPUs). ``shared_with``: the model's other requests of the same buffer."""

    shapes: Literal["marlin", "humming"]
    element_bytes: float = Field(gt=0)  # the activations' dtype (bf16: 2)
    data_parallel_gather: bool = False
    shared_with: tuple[SharedWorkspaceRequest, ...] = ()
    sources: tuple[str, ...] = Field(min_length=1)
    checked: dt.date
    kind: Literal["spec", "measured", "derived", "assumed"]
    note: str = ""


class MoeKernelRule(Frozen):
    """The kernel a range of an engine's releases picks on some GPU architectures, with the install
    the rule assumes (the release's default pip install)."""

    id: str = Field(pattern=SLUG)
    engine: str
    native_format: str
    first_release: str  # inclusive
    last_release: str | None = None  # inclusive; None: every later release
    architectures: tuple[str, ...] = Field(min_length=1)  # accelerators.yaml architecture values
    # config.json model_type values whose experts take this rule's path; empty: every model no rule names
    model_types: tuple[str, ...] = ()
    kernel: str  # a MoeKernel id
    install: str  # what the rule assumes is installed, and why that picks the kernel
    workspace: MoeWorkspace | None = None  # held through the start-up profile (None: none described)
    sources: tuple[str, ...] = Field(min_length=1)
    checked: dt.date
    kind: Literal["spec", "measured", "derived", "assumed"]
    note: str = ""

    def covers(self, release: str | None) -> bool:
        """Whether the rule holds at ``release`` (None: the newest release line)."""
        if release is None:
            return self.last_release is None
        key = release_key(release)
        return release_key(self.first_release) <= key and (
            self.last_release is None or key <= release_key(self.last_release))


def moe_kernel(catalog, engine: str, native_format: str | None, architecture: str, release: str | None,
               named: str | None = None, model_type: str | None = None) -> tuple[MoeKernel, MoeKernelRule | None] | None:
    """The kernel ``engine`` at ``release`` runs experts of ``native_format`` with on an ``architecture``
    GPU for a ``model_type`` (a rule naming it first, else a rule naming none), and the rule that picked
    it; ``named`` (Deployment.moe_kernel) overrides the rule's choice. None where no rule covers the case
    (native formats, other engines, releases before the format)."""
    kernels = [k for k in catalog.moe_kernels if k.engine == engine and k.native_format == native_format]
    if named is not None:
        chosen = [k for k in kernels if k.id == named]
        if not chosen:
            raise InvalidScenarioError(
                f"{engine} has no MoE kernel {named!r} for {native_format or 'these'} experts", field="moe_kernel",
                allowed=", ".join(k.id for k in kernels) or "none: leave it out")
        runs_here = sorted({r.kernel for r in catalog.moe_kernel_rules if r.engine == engine
                            and r.native_format == native_format and architecture in r.architectures})
        if chosen[0].id not in runs_here:  # no release runs it on this GPU generation
            raise InvalidScenarioError(f"{engine} runs no {named} MoE kernel on {architecture} GPUs",
                                       field="moe_kernel", allowed=", ".join(runs_here) or "none: leave it out")
        return chosen[0], None
    number = None
    if release is not None:
        try:
            number = parse_engine_version(release)[0]
        except ValueError:
            return None  # the memory rule lookup reports the malformed release
    covering = [r for r in catalog.moe_kernel_rules if r.engine == engine and r.native_format == native_format
                and architecture in r.architectures and r.covers(number)]
    named_here = [r for r in catalog.moe_kernel_rules if model_type is not None and model_type in r.model_types]
    for rule in covering:  # the model's own rule
        if model_type is not None and model_type in rule.model_types:
            return catalog.moe_kernels.records[rule.kernel], rule
    for rule in covering:  # the general rule, unless a rule of the model's own describes another path for it
        if not rule.model_types and not any(
                r.engine == engine and r.native_format == native_format and architecture in r.architectures
                for r in named_here):
            return catalog.moe_kernels.records[rule.kernel], rule
    return None


def check_moe_kernels(catalog) -> None:
    """Every kernel and rule names a known engine, known sources and constants; every rule a known
    kernel of its format; two rules never cover one release on one architecture."""
    for item in (*catalog.moe_kernels, *catalog.moe_kernel_rules):
        check_engine_and_sources(catalog, f"moe_kernels:{item.id}", item.id, item.engine, item.sources)
    for r in catalog.moe_kernel_rules:
        if r.workspace is not None:
            check_engine_and_sources(catalog, f"moe_kernel_rules:{r.id}.workspace", r.id, r.engine,
                                     (*r.workspace.sources, *(q for req in r.workspace.shared_with for q in req.sources)))
    for k in catalog.moe_kernels:
        if k.extra_scale_copies_constant and k.extra_scale_copies_constant not in catalog.calibration:
            raise CatalogError(f"moe_kernels:{k.id}: unknown calibration constant {k.extra_scale_copies_constant!r}",
                               field=k.id)
    rules = list(catalog.moe_kernel_rules)
    for r in rules:
        kernel = catalog.moe_kernels.records.get(r.kernel)
        if kernel is None or kernel.native_format != r.native_format or kernel.engine != r.engine:
            raise CatalogError(f"moe_kernel_rules:{r.id}: unknown {r.engine} {r.native_format} kernel {r.kernel!r}",
                               field=r.id)
    for i, a in enumerate(rules):
        for b in rules[i + 1:]:
            if (a.engine, a.native_format) != (b.engine, b.native_format) or not set(a.architectures) & set(b.architectures):
                continue
            if set(a.model_types) != set(b.model_types) and not set(a.model_types) & set(b.model_types):
                continue  # rules for different models (or a model's rule beside the general one)
            lo, hi = sorted((a, b), key=lambda r: release_key(r.first_release))
            if lo.last_release is None or release_key(lo.last_release) >= release_key(hi.first_release):
                raise CatalogError(f"moe_kernel_rules: {a.id} and {b.id} overlap", field=b.id)
