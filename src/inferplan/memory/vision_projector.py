"""The vision projector Ollama loads with a vision model's tag, counted on the GPU beside the text model.

Ollama points llama-server's ``--mmproj`` at the model's projector (for gemma3, gemma4, mistral3 and other
architectures, the vision tensors its own blob holds inline) and keeps it on the GPU unless a stated ``num_gpu``
(``--n-gpu-layers``) leaves text layers on the CPU, when it passes ``--no-mmproj-offload``, or a GPU lacks room for it (``ollama.yaml``: ollama-vision-projector-arches,
ollama-mmproj-memory-requirement). The catalogue's GGUF builds of these models hold the text model alone, so a plan
of the tag's build adds the projector's bytes where the tag states them (``OllamaTag.vision_projector_bytes``),
and they come out of the KV cache's room. A tag with no stated size is planned as the text model alone, as its
build line says. The 1 GiB Ollama asks llama-server's ``--fit`` to keep free beside it is a placement margin, not
memory allocated, and is not counted.
"""

from __future__ import annotations

from inferplan.catalog.ollama import named_build
from inferplan.inputs.deployment import Deployment
from inferplan.memory.offload import all_layers_on_gpu
from inferplan.memory.resolve import resolve_model
from inferplan.units import fmt_gib


def vision_projector_bytes(catalog, d: Deployment) -> float:
    """Bytes of the vision projector the Ollama tag naming ``d``'s model loads on the GPU, where ``d`` (as planned,
    after ``with_default_engine``) runs the tag's build and the tag states its size; else 0. llama.cpp loads the
    projector on one GPU: the plan counts it on every GPU's budget, the one with the least room among them."""
    named = named_build(catalog, d.model)
    if named is None or not named.runs(d.engine, d.quantization) or not (d.gpu or d.system):
        return 0.0
    arch = resolve_model(catalog, d.model).architecture
    if d.n_gpu_layers is not None and d.placement_chosen_by is None and arch is not None and \
            not all_layers_on_gpu(d.n_gpu_layers, arch.num_layers):
        return 0.0  # num_gpu below every layer: Ollama passes --no-mmproj-offload, the projector runs on the CPU
    return named.vision_projector_bytes


def vision_projector_notes(catalog, d: Deployment, projector_bytes: float) -> list[str]:
    """One line saying the projector is counted and where its size comes from (none where it is not counted)."""
    if not projector_bytes:
        return []
    named = named_build(catalog, d.model)
    return [f"vision projector of {named.tag}: {fmt_gib(projector_bytes)} held on the GPU beside the text "
            "model, as Ollama loads it there (llama-server --mmproj), taken from the KV cache's room; its size is "
            "that of the model's F16 projector file, which Ollama's blob holds inline"]
