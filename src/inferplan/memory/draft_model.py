"""Speculative decoding by the ``draft_model`` method: a separate smaller model drafts, and the engine holds
it beside the target. vLLM builds the draft's own model config at the target's dtype and the draft's own
quantization (``vllm/v1/worker/gpu/spec_decode/speculator_config.py`` ``DraftModelSpeculatorConfig.configure``,
0.34.0), loads the whole draft (its own embeddings and output head, at the target's tensor parallelism) before
the KV cache is sized, and gives its attention layers entries in the target's KV pool, as for an EAGLE-3 head
(``vllm/v1/spec_decode/draft_model.py`` and ``llm_base_proposer.py`` ``load_model``, 0.31.0): ``engines.yaml``
``draft_model_memory_counted``, with that source. Other engines: not counted, and said so."""

from __future__ import annotations

from dataclasses import dataclass

from inferplan.catalog.architecture import Architecture, LayerKind
from inferplan.catalog.models import ModelSpec
from inferplan.errors import InvalidScenarioError
from inferplan.inputs.deployment import Deployment
from inferplan.memory.eagle3 import with_draft_layers
from inferplan.memory.resolve import resolve_model
from inferplan.memory.weights import weight_bytes
from inferplan.units import fmt_gib

FIELD = "draft_model"
_ATTENTION = (LayerKind.FULL, LayerKind.SLIDING)
ALLOWED = ("a smaller model of the same tokenizer: a catalogue model id or alias (qwen3-0.6b), its Hugging Face repo, "
           "or a config.json path")


@dataclass(frozen=True)
class DraftModelMemory:
    """The draft model a deployment runs, as ``engine`` holds it: weights bytes of one copy (0: not counted) and the
    decoder layers that add KV entries to the target's pool (0: none counted); ``counted``: whether the engine's
    placement of them is catalogued (``engines.yaml`` ``draft_model_memory_counted``)."""

    name: str
    spec: ModelSpec
    engine: str
    weight_bytes: float
    kv_layers: int
    counted: bool = True

    def weight_bytes_per_gpu(self, tensor_parallel_size: int) -> float:
        """Split over the tensor-parallel ranks: vLLM runs the draft at the target's tensor parallelism."""
        return self.weight_bytes / tensor_parallel_size


def with_draft_model(catalog, d: Deployment, draft_model: str | None) -> Deployment:
    """``d`` drafting with the model ``draft_model`` names (``draft_checkpoint``): none named is refused naming
    ``draft_model`` (vLLM refuses it too), and an MTP draft beside it (naming ``speculative_method``). The plan
    (``draft_model_memory``) refuses a name the catalogue, the local cache or a config.json path does not give."""
    if d.mtp_draft:
        raise InvalidScenarioError("mtp_draft drafts with the MTP layers, not by draft_model", field="speculative_method",
                                   allowed="mtp, or leave mtp_draft out", names=("mtp_draft",))
    if not draft_model:
        raise InvalidScenarioError("the draft_model method drafts with a separate smaller model: name it",
                                   field=FIELD, allowed=f"{ALLOWED}; or another speculative_method (ngram, eagle3, mtp)",
                                   names=("speculative_method",))
    return d.model_copy(update={"draft_checkpoint": draft_model})


def draft_model_memory(catalog, d: Deployment, spec: ModelSpec, engine: str) -> DraftModelMemory | None:
    """The draft model ``d`` runs as ``engine`` holds it (None: none). On an engine whose placement of it is
    catalogued (``draft_model_memory_counted``: vLLM) its native checkpoint's weights and,
    where its attention layers have the target's KV shape, each of them as one of the target's full-attention
    layers. A draft of another vocabulary (vLLM refuses it) or another KV shape (a pool of mixed shapes is not
    modelled) is refused naming ``draft_model``."""
    if not d.draft_checkpoint:
        return None
    if d.mtp_draft or d.eagle3_draft:
        raise InvalidScenarioError("one draft per deployment: a draft model beside an MTP or EAGLE-3 draft", field=FIELD,
                                   allowed="no draft_checkpoint with mtp_draft or eagle3_draft", names=("mtp_draft", "eagle3_draft"))
    draft = resolve_model(catalog, d.draft_checkpoint, FIELD)
    record = catalog.engine(engine)
    if not record.draft_model_memory_counted:
        return DraftModelMemory(d.draft_checkpoint, draft, engine, 0.0, 0, counted=False)
    ours, theirs = (m.architecture.vocab_size if m.architecture else None for m in (draft, spec))
    if ours and theirs and ours != theirs:  # vLLM refuses it (SpeculativeConfig.verify_equal_vocab_size_if_draft_model)
        raise InvalidScenarioError(f"draft model {draft.name} has a vocabulary of {ours:,} tokens, {spec.name} one of "
                                   f"{theirs:,}: {record.name} drafts only with the target's vocabulary", field=FIELD,
                                   allowed=f"a draft with {spec.name}'s tokenizer ({theirs:,} tokens)")
    quant = catalog.quantization(draft.checkpoints[0].quantization if draft.checkpoints else "bf16")
    weights = weight_bytes(draft, quant).total_bytes
    return DraftModelMemory(d.draft_checkpoint, draft, engine, weights, _kv_layers(spec, draft))


def _kv_layers(spec: ModelSpec, draft: ModelSpec) -> int:
    target, arch = spec.architecture, draft.architecture
    if target is None:
        return 0
    same = (arch is not None and not draft.architecture_is_proxy and set(arch.layer_kinds) <= set(_ATTENTION)
            and arch.mla is None and target.mla is None and target.global_attention is None
            and (arch.num_kv_heads, arch.head_dim) == (target.num_kv_heads, target.head_dim))
    if not same:
        raise InvalidScenarioError(f"draft model {draft.name}'s attention layers differ in KV shape from "
                                   f"{spec.name}'s: their KV in one pool is not modelled", field=FIELD,
                                   allowed=f"a draft with the target's KV heads and head size ({target.num_kv_heads} x "
                                           f"{target.head_dim}), or another speculative_method")
    return len(arch.layer_kinds)


def draft_model_kv_architecture(arch: Architecture | None, plan: DraftModelMemory | None) -> Architecture | None:
    """The target's layers with the draft's after them, where the pool holds the draft's KV."""
    if arch is None or plan is None or not plan.kv_layers:
        return arch
    return with_draft_layers(arch, plan.kv_layers)


def draft_model_notes(plan: DraftModelMemory | None, tensor_parallel_size: int) -> list[str]:
    if plan is None:
        return []
    if not plan.counted:
        return [f"draft model {plan.name} on {plan.engine}: where the engine holds a draft model's memory is not "
                "catalogued; its weights and KV are not counted"]
    return [f"speculative decoding by draft_model on {plan.engine} with {plan.spec.name} ({plan.name}): its weights "
            f"({fmt_gib(plan.weight_bytes)}, {fmt_gib(plan.weight_bytes / tensor_parallel_size)} per tensor-parallel rank, its own embeddings and "
            f"output head included) are loaded before the KV cache is sized; its {plan.kv_layers} attention layer(s) "
            "hold KV entries in the target's pool, each as one of the target's full-attention layers (the same KV "
            "heads and head size)"]
