"""The closed loop that prices the wait of the sequences ``fit`` queues above an engine's running cap: the
deployment fit planned and request lengths that fit its context, for ``inferplan simulate --clients``."""

from __future__ import annotations

from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.memory.context_cache import context_sized_slots
from inferplan.memory.fit_result import MemoryFit


def fit_queue_loop(d: Deployment, result: MemoryFit,
                   catalog: Catalog | None = None) -> tuple[Deployment, Workload] | None:
    """The deployment and the requests a closed loop of ``d.concurrency`` clients runs to price the queue of
    ``result``, fit's answer for ``d`` (None: it fits nothing, or queues nothing). The deployment is ``d`` at the
    context fit planned, on llama.cpp started with the --parallel slots fit planned, whichever build (a simulated
    llama-server would otherwise start the most slots that fit; a --parallel 1 that opens 4 over one cache
    stays 1); the requests are the workload's defaults, or, where one of those is longer than that context, the
    context split between prompt and output as they are."""
    context = result.max_model_len
    if not result.fits or not result.queued_sequences or context < 2:
        return None
    started = context_sized_slots(catalog or load_catalog(), d, result.engine)  # the --parallel the launch states
    slots = {"max_num_seqs": started} if started is not None else {}
    planned = d.model_copy(update={"concurrency": None, "max_model_len": context, **slots})
    default = Workload()
    request = default.input_len + default.output_len
    if request <= context:
        return planned, default
    output = max(context * default.output_len // request, 1)
    return planned, Workload(input_len=context - output, output_len=output)
