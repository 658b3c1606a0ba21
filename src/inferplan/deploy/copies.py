"""The copies a plan runs on its GPUs, and the one instance a launch command starts.

A deployment on more GPUs than one instance (TP × PP, times DP when the engine runs the data-parallel
ranks) takes runs that many copies side by side; a launch command starts one of them and says so
(``copies_note``). ``launched_instance`` is that one instance as a deployment of its own GPUs, what a
test of the launched command (the acceptance pack) predicts for.
"""

from __future__ import annotations

from inferplan.catalog.loader import Catalog
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import as_planned
from inferplan.memory.hardware import resolve_hardware, with_default_engine
from inferplan.memory.layout import instance_gpus


def _copies(d: Deployment, catalog: Catalog) -> tuple[int, int]:
    """(copies of one instance ``d``'s GPUs hold, its GPUs); ``d`` with its parallel sizes as planned."""
    if d.gpus is None and d.system is None:
        return 1, instance_gpus(d)
    gpus = resolve_hardware(catalog, d).gpus
    return gpus // instance_gpus(d), gpus


def copies_note(d: Deployment, catalog: Catalog) -> tuple[str, ...]:
    """What to do with a command that starts one of several copies the plan runs on its GPUs (``d`` with
    its parallel sizes as planned)."""
    return _note(d, *_copies(d, catalog))


def _note(d: Deployment, copies: int, gpus: int) -> tuple[str, ...]:
    """``copies_note`` for ``copies`` of ``d``'s instance on ``gpus`` GPUs."""
    if copies < 2:  # one copy, whatever GPUs it leaves idle
        return ()
    instance = instance_gpus(d)
    idle = gpus - copies * instance
    where = f"{copies * instance} of the {gpus} GPUs ({idle} idle)" if idle else f"{gpus} GPUs"
    replicas = "" if idle else f" (--format k8s runs them as {copies} replicas)"  # k8s wants whole instances
    return (f"this starts one of {copies} copies the plan runs on {where}, {instance} GPU{'s' if instance > 1 else ''}"
            f" each: start each on its own GPUs and port behind a load balancer{replicas}",)


def launched_instance(d: Deployment, catalog: Catalog) -> tuple[Deployment, tuple[str, ...]]:
    """``d`` as one launch command starts it: its engine and parallel sizes as planned (``as_planned``: fit's
    layout of a system or GPU count named alone) and, where its GPUs hold several copies of that instance,
    only the instance's own GPUs; and the note saying how to start the other copies (``copies_note``)."""
    d = as_planned(with_default_engine(d, catalog), catalog)
    copies, gpus = _copies(d, catalog)
    return (d, ()) if copies < 2 else (d.model_copy(update={"gpus": instance_gpus(d)}), _note(d, copies, gpus))
