"""How an engine's launcher turns on its two serving modes, as data (``engine_flags.yaml``: ``speculative``
and ``disaggregation`` of an engine's record).

Speculative decoding (``SpeculativeRule``) is JSON under one flag, one flag per field or a mapping in the
engine's options file, each field filled from the planned draft. Prefill/decode disaggregation
(``DisaggregationRule``) is each role's flags, the router that joins the pools (its command and, where it
reads one, its config file, ``RouterFile``), the ports each worker needs its own of, how a worker tells
its peers its address (``PeerAddress``) and the pipeline stages its KV connector hands over between
(``PipelineBound``); a router that finds the pools' pods itself on Kubernetes
is ``discovery_schema.py``. Where a container keeps its downloads (``ModelCache``) is the record's too.
"""

from typing import Literal

from pydantic import Field, model_validator

from inferplan.catalog.discovery_schema import PodDiscovery
from inferplan.catalog.provenance import BytesPerS
from inferplan.catalog.schema import Frozen


# what a speculative-decoding field is filled with
SpeculativeValue = Literal["method", "tokens", "tokens_plus_one", "draft_model", "one"]


class SpeculativeRule(Frozen):
    """Speculative decoding: JSON under one flag (``json_flag``), one flag per field, or a mapping at
    ``options_key`` of the engine's options file."""

    json_flag: str | None = None
    options_key: str | None = None
    fields: dict[str, SpeculativeValue]  # JSON key or flag -> what it is given
    fields_by_method: dict[str, dict[str, SpeculativeValue]] = {}  # a method whose fields differ (SGLang NGRAM)
    methods: dict[str, str]  # inferplan method (ngram, draft_model, eagle3, mtp) -> the engine's name
    draft_required: tuple[str, ...] = ()  # methods that need a separate draft checkpoint on this engine
    source: str
    note: str | None = None


    @model_validator(mode="after")
    def _methods_known(self) -> "SpeculativeRule":
        unknown = sorted({*self.fields_by_method, *self.draft_required} - set(self.methods))
        if unknown:
            raise ValueError(f"speculative methods not in methods: {', '.join(unknown)}")
        return self


class RouterFile(Frozen):
    """A file the router reads (TensorRT-LLM's disaggregated-server config), as a YAML template."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    template: dict  # placeholders as in ``DisaggregationRule.router``; a list item with one expands per worker
    source: str


class PeerAddress(Frozen):
    """How a disaggregated worker tells its peers the address they reach it at: ``env``, the variable it is
    started with (vLLM's NIXL side channel host, whose default is localhost), or None where the engine
    finds its own routable address; with the source that says which."""

    env: str | None = None
    # the decode reaches the prefill at the host of the prefill URL the router hands over (SGLang's bootstrap
    # server): behind a Service that spreads requests over several pods, the router's request and the decode's
    # lookup may land on different pods
    at_router_host: bool = False
    router_source: str | None = None  # where the router hands the decode its prefill URL's host
    source: str
    note: str | None = None


class PipelineBound(Frozen):
    """The most pipeline stages a pool's instance runs with where the engine's KV connector hands the cache over
    between instances of no more (vLLM's NixlConnector refuses handshake metadata from a stage past the first)."""

    max_pipeline_parallel_size: int = Field(ge=1)
    source: str
    note: str | None = None


class DisaggregationRule(Frozen):
    """Prefill/decode disaggregation: per role, JSON under ``json_flag`` or flag -> value.

    ``router`` is the command that joins the pools. An argument holding ``{prefill.host}``,
    ``{prefill.port}``, ``{prefill.ports[NAME]}`` (or the decode ones) is written once per worker of
    that role; a nested list is a group of arguments written once per worker (SGLang's
    ``--prefill URL BOOTSTRAP_PORT``). ``{prefill.count}`` is the role's worker count."""

    json_flag: str | None = None
    roles: dict[Literal["prefill", "decode"], dict[str, str]]
    router: tuple[str | tuple[str, ...], ...] = ()
    router_file: RouterFile | None = None
    router_note: str | None = None
    router_source: str | None = None  # where the router's command is read, where not the rule's source
    # the image the router runs on Kubernetes where the engine's image does not ship it (None: the engine's)
    router_image: str | None = None
    router_image_source: str | None = None
    # the router's flag for the seconds it waits for the workers to start before it gives up (None: it has none);
    # given the startup window a worker's Kubernetes probe allows (deploy.model_cache)
    router_startup_timeout_flag: str | None = None
    router_startup_timeout_source: str | None = None
    router_port: int = Field(ge=1, le=65535)  # where the router takes requests (its --port or its config's port)
    # what each worker listens on: the first worker's port (None: the engine's default port), the next
    # worker's one more; ``worker_ports``: further ports each worker needs its own of on one host, a flag
    # (leading -) or an environment variable -> the first worker's value
    first_worker_port: int | None = Field(None, ge=1, le=65535)
    worker_ports: dict[str, int] = {}
    options: dict = {}  # options-file entries every worker needs (TensorRT-LLM cache_transceiver_config)
    peer_address: PeerAddress
    pod_discovery: PodDiscovery | None = None  # on Kubernetes, a router that finds the pools' pods itself
    pipeline: PipelineBound | None = None  # pipeline stages a pool's instance runs with at most (None: no bound known)
    source: str
    note: str | None = None

    def pipeline_refusal(self, pipeline_parallel_size: int) -> str | None:
        """Why a pool's instance of ``pipeline_parallel_size`` stages cannot hand its KV cache over (None: it can)."""
        bound = self.pipeline
        if bound is None or pipeline_parallel_size <= bound.max_pipeline_parallel_size:
            return None
        return (f"{self.connector('prefill') or 'the KV connector'} hands the KV cache over between pool instances of "
                f"at most {bound.max_pipeline_parallel_size} pipeline stage(s), not {pipeline_parallel_size}")

    def connector(self, role: str) -> str | None:
        """The KV connector a ``role`` worker launches with (its ``kv_connector``; None: none named)."""
        return self.roles[role].get("kv_connector") if role in self.roles else None


class ModelCache(Frozen):
    """Where the engine's container downloads a checkpoint (a Kubernetes pod mounts its model cache there), the
    variable it reads a Hugging Face token from, and the download rate a pod's start-up window assumes."""

    path: str = Field(pattern=r"^/")
    token_env: str | None = None
    source: str
    download_bytes_per_s: BytesPerS
