"""The prefill CUDA graphs an engine release captures for a deployment by default, and the memory its own
memory fraction keeps out for them (``catalog/prefill_graphs.py``, on the rule's ``gpu_memory_defaults``).

SGLang from 0.5.10 captures the prefill forward at a list of token counts up to its chunk on CUDA and, when
``--mem-fraction-static`` is not given, reserves 8 MiB per captured size (1.5 GiB flat for a model with latent
attention) besides the chunk's and the decode graphs' terms, before the 10 GiB floor. A release turns the
graphs off for some models (an architecture list, multimodal models outside an allow-list, latent attention
in the breakable releases) and settings (pipeline stages, host offload, a speculative draft, DP attention):
``prefill_capture`` says which applies to a plan, ``PrefillCapture.reserve_bytes`` what it keeps out."""

from __future__ import annotations

from dataclasses import dataclass

from inferplan.catalog.architecture import Architecture
from inferplan.catalog.memory_rules import MemoryRule
from inferplan.catalog.prefill_graphs import PrefillGraphs
from inferplan.inputs.deployment import Deployment
from inferplan.units import MiB


@dataclass(frozen=True)
class PrefillCapture:
    """Prefill graphs a release captures for one plan: ``latent`` models keep the flat figure out."""

    graphs: PrefillGraphs
    release: str | None  # the release planned (None: the rule's newest)
    latent: bool
    context_tokens: int | None  # a stated context that caps the largest size, where the release caps it

    def sizes(self, chunk_tokens: int) -> int:
        """How many token counts are captured with a chunk of ``chunk_tokens``."""
        largest = min(chunk_tokens, self.context_tokens or chunk_tokens)
        return len(self.graphs.sizes(largest))

    def reserve_bytes(self, chunk_tokens: int) -> float:
        """What the engine's default fraction keeps out for the graphs, per GPU."""
        if self.latent:
            return self.graphs.latent_attention_mib * MiB
        return self.graphs.mib_per_size * self.sizes(chunk_tokens) * MiB

    def note(self, engine: str, chunk_tokens: int) -> str:
        """What ``fit`` says of the term."""
        at = f"{engine} {self.release}" if self.release else engine
        what = (f"{self.graphs.latent_attention_mib / 1024:g} GiB flat for latent attention" if self.latent else
                f"{self.graphs.mib_per_size:g} MiB for each of {self.sizes(chunk_tokens)} token counts up to the "
                f"{min(chunk_tokens, self.context_tokens or chunk_tokens):,}-token chunk")
        return (f"{at} captures prefill CUDA graphs ({self.graphs.backend}) by default: its mem_fraction_static keeps "
                f"{self.reserve_bytes(chunk_tokens) / MiB:,.0f} MiB out for them ({what}); {self.graphs.off_flag} "
                "turns them off")


def prefill_capture(rule: MemoryRule | None, engine: str, d: Deployment, arch: Architecture | None, software: str,
                    pipeline_parallel_size: int) -> tuple[PrefillCapture | None, str | None]:
    """The prefill graphs ``rule``'s release captures for ``d`` by default, or None and why none (None: the
    release captures none by default, or the rule names none); ``engine``: its name, for the note."""
    defaults = rule.gpu_memory_defaults if rule else None
    release = rule.planned_release(d.engine_version) if rule else None
    graphs = defaults.prefill_graphs_at(release) if defaults else None
    if graphs is None:
        return None, None
    off = _off_reason(graphs, d, arch, software, pipeline_parallel_size)
    if off:
        return None, f"{engine} {release or ''} captures no prefill CUDA graphs {off}".replace("  ", " ")
    latent = arch is not None and arch.mla is not None
    context = d.max_model_len if graphs.largest_clamped_by_context else None
    return PrefillCapture(graphs, release, latent, context), None


_SETTING_WORDS = {"pipeline_parallel": "pipeline parallelism", "host_offload": "weights or KV cache in host RAM",
                  "speculative": "a speculative draft", "dp_attention": "DP attention"}


def _off_reason(graphs: PrefillGraphs, d: Deployment, arch: Architecture | None, software: str, pp: int) -> str | None:
    name = arch.hf_architecture if arch else None
    settings = {"pipeline_parallel": pp > 1,
                "host_offload": bool(d.cpu_offload_gb or d.hicache_size or d.hicache_ratio),
                "speculative": bool(d.mtp_draft or d.eagle3_draft),
                "dp_attention": d.enable_expert_parallel and (d.data_parallel_size or 1) > 1}
    reasons = (
        (software not in graphs.software, f"on {software}"),
        (name in graphs.off_architectures, f"for {name}"),
        (arch is not None and arch.has_vision_tower and name not in graphs.multimodal_architectures,
         f"for a multimodal model ({name})"),
        (arch is not None and arch.mla is not None and (graphs.latent_attention == "off" or (
            graphs.latent_attention == "sparse_only" and arch.dsa is None)), "for a model with latent (MLA) attention"),
        *((settings[s], f"with {_SETTING_WORDS[s]}") for s in graphs.off_with),
    )
    return next((why for applies, why in reasons if applies), None)


def prefill_notes(capture: PrefillCapture | None, off: str | None, d: Deployment, engine: str,
                  chunk_tokens: int) -> list[str]:
    """What ``fit`` says of the prefill-graph term where the engine picks its own fraction (none where it is stated)."""
    if d.gpu_memory_utilization is not None:
        return []
    return [capture.note(engine, chunk_tokens)] if capture else [off] if off else []
