"""How a disaggregation router finds the pools' pods itself on Kubernetes (``DisaggregationRule.pod_discovery``).

Where the decode reaches the prefill at the host the router names (SGLang's bootstrap server), a router pointed at
the prefill pool's Service could hand the decode another pod than the one that ran the prefill, so each prefill pod
must be named to the router. A router that watches the pods through the Kubernetes API (SGLang's model gateway:
``--service-discovery`` with a label selector per pool) names each itself, in a manifest the same size for any
number of pods.
"""

from __future__ import annotations

from inferplan.catalog.schema import Frozen


class PodDiscovery(Frozen):
    """The router's command when it finds each pool's pods by their labels: ``{prefill.host}`` / ``{decode.host}``
    stand for the pool's name (its pods' ``app.kubernetes.io/name`` label), ``{decode.port}`` for the port its pods
    serve on, ``{prefill.ports[NAME]}`` for a further port; ``namespace_flag`` takes the router pod's own namespace
    (from the downward API), which it may watch with a namespaced Role; ``prefill_annotations`` are set on each
    prefill pod (the router reads the bootstrap port from one)."""

    router: tuple[str, ...]
    namespace_flag: str
    prefill_annotations: dict[str, str] = {}
    source: str
    flags_source: str  # where the router's flags and their defaults are read
    note: str | None = None
