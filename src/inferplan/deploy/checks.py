"""What a launch command is refused for before it is written: the checks ``fit`` and ``perf`` make.

An engine that does not run on the accelerator, a context past the model's or the engine's, a
layout the engine cannot run and a deployment that does not fit in memory are refused with the
memory plan's own error (``memory.fit.plan_memory``, ``memory.refusal.refuse_unfit``), naming
the domain field at fault: a user never gets a command that cannot start. A model the catalogue
cannot resolve (a Hugging Face repo it has not imported) cannot be sized; only the engine's
platform is checked for it.
"""

from __future__ import annotations

from inferplan.catalog.loader import Catalog
from inferplan.errors import UnknownModelError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.checks import check_runs_on
from inferplan.memory.fit import plan_memory
from inferplan.memory.hardware import resolve_hardware
from inferplan.memory.layout import instance_gpus
from inferplan.memory.refusal import refuse_unfit


def one_instance(d: Deployment) -> Deployment:
    """``d`` as one of the copies it runs: a stated data-parallel size over a GPU count that is a whole number
    (two or more) of TP × PP × DP instances is that many copies of the instance, each started by one command
    (``--format k8s``: a replica each), as a search pick with replicas states it. Otherwise ``d``."""
    if d.gpus is None or d.data_parallel_size is None:
        return d
    instance = instance_gpus(d)
    if d.gpus <= instance or d.gpus % instance:
        return d
    return d.model_copy(update={"gpus": instance})


def check_deployable(d: Deployment, catalog: Catalog) -> None:
    """Raise where ``fit`` or ``perf`` would refuse ``d`` (each of its copies: ``one_instance``); a deployment
    naming no hardware is left to the engine."""
    if d.gpu is None and d.system is None:
        return
    d = one_instance(d)
    try:
        fit = plan_memory(d, catalog).result
    except UnknownModelError:
        check_runs_on(catalog, d, resolve_hardware(catalog, d))
        return
    refuse_unfit(fit, d, catalog)
