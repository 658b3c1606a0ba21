"""Speculative decoding as the speed model prices it: the flags ``deploy`` launches it with (the method
and draft checkpoint, ``memory.mtp.with_speculative``: an MTP or catalogued EAGLE-3 draft's memory is
counted) and the acceptance rate per draft token every estimate takes (``resolve_acceptance``): the one
stated, else a catalogued EAGLE-3 draft's published one, else the default (assumed, and said so), except for a
method in ``NO_DEFAULT_ACCEPTANCE_METHODS``, which is refused without a stated rate."""

from __future__ import annotations

from dataclasses import dataclass

from inferplan.catalog.eagle3_drafts import draft_by_repo
from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import DEFAULT_ACCEPTANCE_RATE, Workload
from inferplan.memory.eagle3 import acceptance_rate
from inferplan.memory.hardware import with_default_engine
from inferplan.memory.mtp import with_speculative
from inferplan.memory.resolve import resolve_model

# Methods no rate is assumed for: their acceptance is the workload's alone. N-gram (prompt lookup) drafts only where
# the output repeats the context: vllm-project/vllm#16258 finds it Pareto-worse than no drafting on code generation,
# vllm-project/vllm#24344 measures 821 of 5,376 tokens of an edit set generated with no draft proposed, and vLLM's
# docs (docs/features/speculative_decoding) call its speedups modest (docs/errors.md "acceptance_rate").
NO_DEFAULT_ACCEPTANCE_METHODS = ("ngram",)


def no_default_acceptance(method: str) -> str:
    """Why ``method`` (one of ``NO_DEFAULT_ACCEPTANCE_METHODS``) is refused without a stated rate: said of the drafts
    that run by it, named or as the engine's launch runs them where no method is named (``memory.mtp.unnamed_method``)."""
    return (f"the drafts run by {method} (the engine's launch runs it where no method is named and no MTP draft is "
            "planned), which has no default acceptance_rate: it drafts only where the output repeats the prompt, so "
            "the rate is the workload's: state it, or name another method (docs/errors.md)")


def check_drafts_priced(d: Deployment, w: Workload) -> None:
    """Refuse a deployment stating ``speculative_tokens`` under a workload that states none, naming the workload's
    ``speculative_tokens``: the estimate prices the workload's drafts at its ``acceptance_rate``, which is stated only
    beside them (an ngram draft has no default rate), so drafts the deployment alone states would go unpriced."""
    if d.speculative_tokens and not w.speculative_tokens:
        raise InvalidScenarioError(
            f"the deployment drafts {d.speculative_tokens} speculative_tokens per step but the workload states none: "
            "the estimate prices the workload's draft tokens, at the acceptance_rate stated beside them",
            field="speculative_tokens", allowed=f"{d.speculative_tokens} in the workload too (with its acceptance_rate), "
                                                "or none in the deployment")


@dataclass(frozen=True)
class Acceptance:
    """The acceptance rate per draft token drafts are priced at, and where it comes from."""

    rate: float
    basis: str  # "stated", "from <repo>'s …" (a published figure) or "assumed: …"

    @property
    def assumed(self) -> bool:
        return self.basis.startswith("assumed")

    @property
    def text(self) -> str:
        return f"acceptance {self.rate:.3g} {self.basis}"


def resolve_acceptance(catalog: Catalog, d: Deployment, stated: float | None) -> Acceptance:
    """The rate ``d``'s drafts are priced at: ``stated`` where given; else the one that gives its catalogued
    EAGLE-3 draft's published acceptance length (``memory.eagle3.acceptance_rate``); else the default,
    assumed because the draft (or the model's MTP layers) publishes none; a method in
    ``NO_DEFAULT_ACCEPTANCE_METHODS`` without ``stated`` is refused naming ``acceptance_rate``."""
    if stated is not None:
        return Acceptance(stated, "stated")
    if d.eagle3_draft:
        draft = draft_by_repo(catalog, resolve_model(catalog, d.model).id, d.eagle3_draft)
        rate = acceptance_rate(draft)
        if rate is not None:
            a = draft.acceptance
            return Acceptance(rate, f"from {draft.repo}'s published acceptance length {a.length.value:g} at "
                                    f"{a.draft_tokens} draft tokens ({a.length.source})")
        return Acceptance(DEFAULT_ACCEPTANCE_RATE, f"assumed: {d.eagle3_draft} publishes none")
    if d.mtp_draft:
        return Acceptance(DEFAULT_ACCEPTANCE_RATE, "assumed: the model's MTP layers publish none")
    if d.speculative_method in NO_DEFAULT_ACCEPTANCE_METHODS:
        raise InvalidScenarioError(no_default_acceptance(d.speculative_method), field="acceptance_rate",
                                   allowed="the rate measured on this workload, 0 to 1", names=("acceptance_rate",))
    return Acceptance(DEFAULT_ACCEPTANCE_RATE, "assumed: none stated")


def with_drafts(catalog: Catalog | None, d: Deployment, w: Workload, speculative_method: str | None,
                draft_model: str | None = None) -> Deployment:
    """``d`` as it runs ``w.speculative_tokens`` drafts per step made by ``speculative_method``
    (``draft_model``: the EAGLE-3 checkpoint); the estimate prices them (``resolve_acceptance``)."""
    if not w.speculative_tokens and speculative_method is None:
        return d
    catalog = catalog or load_catalog()
    return with_speculative(catalog, with_default_engine(d, catalog), w.speculative_tokens, speculative_method, draft_model)
