"""A LeaderWorkerSet: one instance over several hosts as a group of pods, one per host.

The LeaderWorkerSet API (kubernetes-sigs/lws, ``leaderworkerset.x-k8s.io/v1``) starts ``spec.replicas``
groups of ``spec.leaderWorkerTemplate.size`` pods: a leader from ``leaderTemplate`` and ``size - 1``
workers from ``workerTemplate``, restarted together (``restartPolicy: RecreateGroupOnPodRestart``). Each
pod gets the leader's address and its own index in the group as ``LWS_LEADER_ADDRESS`` and
``LWS_WORKER_INDEX`` (0 on the leader), which the hosts' commands take (``deploy.nodes.LEADER_WORKER_SET``);
a Service selects the leaders by their ``role: leader`` label. Field names and variables as the project's
basic vLLM and SGLang examples use them (source ``flags-lws-examples`` in ``catalog/data/engine_flags.yaml``).
"""

from __future__ import annotations

from collections.abc import Callable

LWS_API_VERSION = "leaderworkerset.x-k8s.io/v1"
LEADER_LABEL = {"role": "leader"}
WORKER_LABEL = {"role": "worker"}


def leader_worker_set(app: str, labels: Callable[[], dict], *, replicas: int, size: int, leader: dict,
                      worker: dict) -> dict:
    """``replicas`` groups of ``size`` pods: a ``leader`` pod (host 0, which serves the API) and ``size - 1``
    ``worker`` pods."""
    return {
        "apiVersion": LWS_API_VERSION,
        "kind": "LeaderWorkerSet",
        "metadata": {"name": app, "labels": labels()},
        "spec": {
            "replicas": replicas,
            "leaderWorkerTemplate": {
                "size": size,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": {"metadata": {"labels": {**labels(), **LEADER_LABEL}}, "spec": leader},
                "workerTemplate": {"metadata": {"labels": {**labels(), **WORKER_LABEL}}, "spec": worker},
            },
        },
    }
