"""The speculative decoding ``perf`` plans from the flags ``deploy`` launches it with: the method and
draft checkpoint (``memory.mtp.with_speculative``: an MTP or catalogued EAGLE-3 draft's memory is
counted) and, for a catalogued EAGLE-3 draft, the acceptance rate its publisher measured where the
user states none (``memory.eagle3.acceptance_rate``)."""

from __future__ import annotations

from inferplan.catalog.eagle3_drafts import draft_by_repo
from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.eagle3 import acceptance_rate
from inferplan.memory.hardware import with_default_engine
from inferplan.memory.mtp import with_speculative
from inferplan.memory.resolve import resolve_model


def with_drafts(catalog: Catalog | None, d: Deployment, w: Workload, speculative_method: str | None,
                draft_model: str | None = None, stated_rate: float | None = None) -> tuple[Deployment, Workload]:
    """``d`` and ``w`` as they run ``w.speculative_tokens`` drafts per step made by ``speculative_method``
    (``draft_model``: the EAGLE-3 checkpoint); ``stated_rate``: the acceptance rate the user gave (None:
    a catalogued draft's measured one, else the workload's)."""
    if not w.speculative_tokens and speculative_method is None:
        return d, w
    catalog = catalog or load_catalog()
    d = with_speculative(catalog, with_default_engine(d, catalog), w.speculative_tokens, speculative_method, draft_model)
    rate = None
    if d.eagle3_draft and stated_rate is None:
        rate = acceptance_rate(draft_by_repo(catalog, resolve_model(catalog, d.model).id, d.eagle3_draft))
    return d, (w if rate is None else w.model_copy(update={"acceptance_rate": rate}))
