"""A disaggregation router that finds the pools' pods itself on Kubernetes (``DisaggregationRule.pod_discovery``):
its command, and the access it needs to watch them.

The router pod runs under its own ServiceAccount, bound by a RoleBinding to a Role that may ``get``, ``list`` and
``watch`` pods in its namespace (what SGLang's model gateway asks of RBAC for service discovery, source
``flags-sglang-gateway-discovery``), and is told that namespace from the downward API's ``metadata.namespace``
(Kubernetes docs, https://kubernetes.io/docs/tasks/inject-data-application/environment-variable-expose-pod-information/),
written into its arguments as ``$(POD_NAMESPACE)``, which Kubernetes expands from the container's environment.
"""

from __future__ import annotations

from collections.abc import Callable

from inferplan.catalog.discovery_schema import PodDiscovery
from inferplan.catalog.launch_modes_schema import DisaggregationRule
from inferplan.deploy.router import Worker, filled, router_argv, worker_ports

NAMESPACE_VARIABLE = "POD_NAMESPACE"
NAMESPACE_FIELD = "metadata.namespace"  # the downward API's field of a pod's own namespace
POD_VERBS = ["get", "list", "watch"]


def discovery_argv(rule: DisaggregationRule, discovery: PodDiscovery, workers: dict[str, list[Worker]]) -> tuple[str, ...]:
    """The router's argv that finds each pool's pods (``workers``: one per pool, its name and port)."""
    return (*router_argv(rule, workers, template=discovery.router), discovery.namespace_flag, f"$({NAMESPACE_VARIABLE})")


def prefill_annotations(rule: DisaggregationRule, discovery: PodDiscovery) -> dict[str, str]:
    """What each prefill pod is annotated with for the router (its bootstrap port), every pod alike."""
    pod = Worker("", 0, worker_ports(rule, 0))
    return {key: filled(value, "prefill", pod) for key, value in discovery.prefill_annotations.items()}


def discovering_pod(pod: dict, app: str) -> None:
    """``pod`` (the router's) runs as the ServiceAccount ``app`` and knows its own namespace."""
    pod["serviceAccountName"] = app
    pod["containers"][0]["env"] = [{"name": NAMESPACE_VARIABLE, "valueFrom": {"fieldRef": {"fieldPath": NAMESPACE_FIELD}}}]


def access_docs(app: str, labels: Callable[[], dict]) -> list[dict]:
    """The ServiceAccount ``app``, a Role that may read and watch the namespace's pods, and their RoleBinding."""
    meta = lambda: {"name": app, "labels": labels()}  # noqa: E731
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta()},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta(),
         "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": list(POD_VERBS)}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta(),
         "subjects": [{"kind": "ServiceAccount", "name": app}],
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": app}},
    ]
