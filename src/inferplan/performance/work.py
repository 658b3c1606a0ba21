"""The work one forward pass does: FLOPs and bytes moved, per GPU of an instance.

- Linear layers: 2 FLOPs per active parameter per token. Prefill computes logits only for the
  last token of each sequence; decode computes them for every token.
- Attention: per token at context c, QK^T and PV cost ``4 · heads · head_dim · c`` FLOPs per
  full-attention layer (``min(c, window)`` for sliding layers; MLA in decode works in the latent
  space: ``2 · heads · (2 · kv_lora_rank + rope_dim) · c``).
- Weights read per step: every dense weight once; of each MoE layer's experts, the expected number
  of distinct experts a step's T tokens touch, ``E · (1 − (1 − k/E)^T)`` — T counting the tokens of
  every data-parallel rank where the ranks' GPUs split the experts (expert parallelism, or vLLM's MoE
  tensor-parallel group over TP × DP GPUs, which all-gathers every rank's tokens).
- KV read per step: every sequence's cache once (sliding layers capped at the window).
- Hyper-connections (DeepSeek-V4's mHC): each sublayer's input is mixed from, and its output mixed
  back into, ``n`` residual streams — small kernels on every tensor-parallel rank, a sourced time per
  seam (``Rates.hc_seam_s``) and ``(3n + 2) · hidden`` 16-bit values moved per token per seam.
- Emulated formats (``Quantization.emulated_fallbacks``: vLLM's MXFP4 W4A4 off MX hardware): every
  forward dequantizes the packed weights into a full copy and multiplies by that, so each quantized
  weight a step reads is also written and read again at the copy's width (``materialized_bytes_per_weight``,
  both ways). An emulated MoE (``materialized_expert_bytes_per_weight``; some releases emulate the routed
  experts alone) dequantizes every expert a GPU holds, so it reads all their packed weights and writes all
  their copies, but the expert kernel then reads only the copies of the experts the step touches.
- Unpacking: formats with super-block scales (llama.cpp K-quants) cost ALU work for every weight
  read, a fitted number of FLOP-equivalents per weight (``Rates.unpack_flops_per_weight``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from inferplan.catalog.architecture import Architecture, LayerKind
from inferplan.catalog.loader import Catalog
from inferplan.performance.offload import HostOffload, host_offload
from inferplan.memory.expert_split import expert_slot_share, redundant_experts
from inferplan.memory.fit import MemoryPlan
from inferplan.memory.kv_cache import sparse_topk_tokens
from inferplan.memory.params import count_params
from inferplan.units import fmt_billions

@dataclass(frozen=True)
class ModelWork:
    active_params: float  # per token, lm_head included, embeddings excluded
    lm_head_params: float
    dense_bytes_per_gpu: float  # weights read every step (embeddings excluded)
    expert_bytes_per_gpu: float  # all routed experts this GPU holds
    num_experts: int
    experts_per_token: int
    hidden_size: int
    num_layers: int
    tp: int
    pp: int
    attn_flops_per_token_ctx: float  # full/MLA layers: FLOPs per token per unit of context (decode)
    attn_prefill_flops_per_token_ctx: float  # the same for prefill (MLA not absorbed)
    window_flops_per_token_ctx: float  # sliding-window layers, per unit of capped context
    window_tokens: int | None
    activation_bytes: float  # per activation value moved (hidden states, residual streams): calibration.yaml activation-bytes
    sparse_flops_per_token_ctx: float = 0.0  # DSA layers' attention (decode), over at most sparse_topk tokens
    sparse_prefill_flops_per_token_ctx: float = 0.0
    sparse_topk: int | None = None
    indexer_flops_per_token_ctx: float = 0.0  # DSA indexers: replicated, so not split by tensor parallelism
    moe_dispatch_bytes_per_token: float = 0.0  # activation copies MoE routing moves per token (this GPU)
    expert_parallel: int = 1  # GPUs the experts are spread over with --enable-expert-parallel
    # data-parallel ranks whose tokens every GPU's share of the routed experts serves (expert parallelism, or
    # a MoE tensor-parallel group that spans the stated ranks: memory/expert_split.py expert_data_parallel)
    expert_data_parallel: int = 1
    moe_layers: int = 0
    unpacked_weights_per_byte: float = 0.0  # weights per byte of a super-block format (K-quants); 0: none unpacked
    head_bytes_per_gpu: float = 0.0  # the lm_head a GPU of the last pipeline stage holds (read every step)
    routed_active_params: float = 0.0  # of active_params: the k routed experts a token passes through, all layers
    expert_params_per_gpu: float = 0.0  # all routed experts this GPU holds, in weights (expert_bytes_per_gpu's)
    hc_seams: float = 0.0  # hyper-connection seams a step of this stage runs (two per decoder layer; 0: no mHC)
    hc_bytes_per_token: float = 0.0  # activations those seams move per token (replicated on every TP rank)
    residual_streams: int = 1  # hidden-state vectors per token a pipeline stage hands to the next (mHC: n)
    notes: tuple[str, ...] = ()
    draft_active_params: float = 0.0  # a separate draft model's (draft_model method): one forward of it per draft token
    draft_layers: int = 0  # its decoder layers (each launches its kernels in every draft forward)
    host: HostOffload | None = None  # weights (and KV cache) in host RAM: memory/offload.py
    # bytes an emulated format writes and reads back per quantized weight each forward (its dequantized copy):
    # outside the routed experts, and of the routed experts (written whole, read where the step routes)
    materialized_bytes_per_weight: float = 0.0
    materialized_expert_bytes_per_weight: float = 0.0

    def last_stage(self) -> ModelWork:
        """The work of the last pipeline stage, which runs the whole lm_head where the figures above
        spread it evenly over the stages (a stage's average): the slowest stage under pipeline
        parallelism, since the others hold only layers (the first also the embedding table, which a
        step does not read whole)."""
        if self.pp == 1 or not self.lm_head_params:
            return self
        return replace(
            self,
            dense_bytes_per_gpu=self.dense_bytes_per_gpu + self.head_bytes_per_gpu * (1 - 1 / self.pp),
            active_params=self.active_params + self.lm_head_params * (self.pp - 1),
            lm_head_params=self.lm_head_params * self.pp,
        )

    @property
    def draft_cost_ratio(self) -> float:
        """A draft token's cost as a share of a target step: a separate draft model's forward, its active
        parameters (its own lm_head among them) over the target's; an MTP or EAGLE head is one decoder layer
        plus the (shared) lm_head."""
        if self.draft_active_params and self.active_params:
            return self.draft_active_params / self.active_params
        return 1 / self.num_layers + (self.lm_head_params / self.active_params if self.active_params else 0.0)

    def weights_read_per_gpu(self, tokens_in_step: float) -> float:
        """Bytes of weights one GPU reads in a step of ``tokens_in_step`` tokens of its instance.
        Where the experts are split over the data-parallel ranks (expert parallelism's whole experts,
        or slices of every expert in a MoE tensor-parallel group spanning the ranks) a GPU's experts
        serve the tokens of every rank, which step together; every rank is taken to be as busy as this
        one (the serving model spreads requests evenly over the ranks)."""
        copies = self.materialized_bytes_per_gpu(tokens_in_step)
        if not self.num_experts or not self.expert_bytes_per_gpu:
            return self.dense_bytes_per_gpu + copies
        # an emulation dequantizes every expert, so reads all their packed weights
        share = 1.0 if self.materialized_expert_bytes_per_weight else self.touched_expert_share(tokens_in_step)
        return self.dense_bytes_per_gpu + self.expert_bytes_per_gpu * share + copies

    def materialized_bytes_per_gpu(self, tokens_in_step: float) -> float:
        """Bytes a forward of an emulated format writes and reads back dequantizing one GPU's quantized weights
        (the 16-bit lm_head left out): of the routed experts, every copy written and those of the experts a
        step of ``tokens_in_step`` tokens touches read. Zero for other formats."""
        dense = (self.active_params - self.routed_active_params - self.lm_head_params) / (self.tp * self.pp)
        half = self.materialized_expert_bytes_per_weight / 2  # the copy's bytes per weight, written or read
        experts = self.expert_params_per_gpu * half * (1 + self.touched_expert_share(tokens_in_step)) if half else 0.0
        return dense * self.materialized_bytes_per_weight + experts

    def touched_expert_share(self, tokens_in_step: float) -> float:
        """The share of a GPU's routed experts a step of ``tokens_in_step`` tokens reads."""
        return self._routing(tokens_in_step)[1] if self.num_experts else 0.0

    def _routing(self, tokens_in_step: float) -> tuple[float, float]:
        """(tokens routed to this GPU's experts, the share of its experts they touch)."""
        routed = max(tokens_in_step, 1) * self.expert_data_parallel
        return routed, 1 - (1 - self.experts_per_token / self.num_experts) ** routed

    def padding_flops_per_gpu(self, tokens_in_step: float, min_rows: float,
                              weight_row_blocks: tuple[float, ...] = ()) -> float:
        """FLOPs a step's weight GEMMs spend on rows they pad: a tensor-core GEMM computes at least
        ``min_rows`` rows of every weight matrix it reads (a dense layer's rows are the step's tokens,
        an expert's the tokens routed to it), so a step with fewer does that much work anyway. With
        ``weight_row_blocks`` a weight-only kernel runs the quantized layers and experts: fewer rows
        than its largest block compute the smallest block that holds them; the lm_head, kept at 16
        bits, still takes ``min_rows``."""
        if min_rows <= 1:
            return 0.0
        rows = max(tokens_in_step, 1.0)
        head = self.lm_head_params if weight_row_blocks else 0.0
        dense = (self.active_params - self.routed_active_params - head) / (self.tp * self.pp)
        padded = dense * _padding(rows, min_rows, weight_row_blocks) + head / (self.tp * self.pp) * max(min_rows - rows, 0.0)
        if self.num_experts and self.expert_params_per_gpu:
            routed, touched = self._routing(rows)
            per_expert = routed * self.experts_per_token / (self.num_experts * touched)
            padded += self.expert_params_per_gpu * touched * _padding(per_expert, min_rows, weight_row_blocks)
        return 2 * padded

    def unpack_flops_per_gpu(self, weight_bytes: float, flops_per_weight: float) -> float:
        """ALU work of unpacking ``weight_bytes`` of super-block weights (zero for other formats)."""
        return weight_bytes * self.unpacked_weights_per_byte * flops_per_weight

    def activation_bytes_per_gpu(self, tokens: float) -> float:
        """Bytes of activations a step moves beside weights and KV cache: MoE layers scatter each
        token's hidden state to its k experts and gather it back, and write and read the experts'
        intermediate results; hyper-connection seams read and write the residual streams."""
        return tokens * (self.moe_dispatch_bytes_per_token + self.hc_bytes_per_token)

    def linear_flops_per_gpu(self, tokens: float, logits_tokens: float) -> float:
        body = self.active_params - self.lm_head_params
        return 2 * (body * tokens + self.lm_head_params * logits_tokens) / (self.tp * self.pp)

    def attention_flops_per_gpu(self, tokens: float, context: float, *, prefill: bool, spread: float = 0.0) -> float:
        """Attention FLOPs of ``tokens`` tokens whose positions are spread evenly over
        ``context ± spread`` (a prompt of n tokens after p cached ones: context p + n/2, spread n/2);
        window and top-k caps apply per position, not to the mean."""
        per_ctx = self.attn_prefill_flops_per_token_ctx if prefill else self.attn_flops_per_token_ctx
        window_ctx = capped_mean(context, spread, self.window_tokens) if self.window_tokens else 0.0
        sparse = self.sparse_prefill_flops_per_token_ctx if prefill else self.sparse_flops_per_token_ctx
        sparse_ctx = capped_mean(context, spread, self.sparse_topk) if self.sparse_topk else 0.0
        sharded = per_ctx * context + self.window_flops_per_token_ctx * window_ctx + sparse * sparse_ctx
        return tokens * (sharded / self.tp + self.indexer_flops_per_token_ctx * context)


def capped_mean(center: float, spread: float, cap: float) -> float:
    """Mean of min(x, cap) for x uniform on [center − spread, center + spread]."""
    lo, hi = max(center - spread, 0.0), center + spread
    if hi <= cap:
        return (lo + hi) / 2
    if lo >= cap or hi == lo:
        return min(center, cap)
    return ((cap * cap - lo * lo) / 2 + cap * (hi - cap)) / (hi - lo)


@dataclass(frozen=True)
class _AttentionCoefficients:
    decode_full: float = 0.0  # FLOPs per token per unit of context
    prefill_full: float = 0.0
    window: float = 0.0  # sliding layers, per unit of capped context
    decode_sparse: float = 0.0  # DSA layers, per selected token (at most index_topk)
    prefill_sparse: float = 0.0
    indexer: float = 0.0  # DSA indexers, per unit of context (every cached token is scored)


def _attention_coefficients(arch: Architecture) -> _AttentionCoefficients:
    """Attention FLOPs per token per unit of context, by how the context is capped. Under DSA the
    MLA attention sees at most the indexer's top-k tokens, while the indexer itself scores every
    cached token (``2 · index_heads · index_head_dim`` FLOPs each)."""
    heads, d = arch.num_attention_heads, arch.head_dim
    full = decode_full = window = decode_sparse = prefill_sparse = indexer = 0.0
    v4 = arch.compressed
    for kind in arch.layer_kinds:
        if v4 and kind in (LayerKind.SLIDING, LayerKind.CSA, LayerKind.HCA):
            # DeepSeek-V4: every layer attends its window; CSA layers the top-k of their pooled entries
            # (one per csa_ratio tokens, picked by an indexer that scores them all), HCA layers all of theirs
            window += 4 * heads * d
            if kind is LayerKind.CSA:
                prefill_sparse += 4 * heads * d / v4.csa_ratio
                decode_sparse += 4 * heads * d / v4.csa_ratio
                indexer += 2 * v4.index_n_heads * v4.index_head_dim / v4.csa_ratio
            elif kind is LayerKind.HCA:
                full += 4 * heads * d / v4.hca_ratio
                decode_full += 4 * heads * d / v4.hca_ratio
        elif kind is LayerKind.SPARSE and arch.dsa:  # MiniMax-M3: the selected blocks; the indexer scores every token
            prefill_sparse += 4 * heads * d
            decode_sparse += 4 * heads * d
            indexer += 2 * arch.dsa.index_n_heads * arch.dsa.index_head_dim
        elif kind is LayerKind.FULL:
            full += 4 * heads * arch.layer_head_dim(kind)
            decode_full += 4 * heads * arch.layer_head_dim(kind)
        elif kind is LayerKind.SLIDING:
            window += 4 * heads * d
        elif kind is LayerKind.MLA and arch.mla:
            m = arch.mla
            prefill = 2 * heads * (m.qk_nope_head_dim + m.qk_rope_head_dim) + 2 * heads * m.v_head_dim
            decode = 2 * heads * (2 * m.kv_lora_rank + m.qk_rope_head_dim)
            if arch.dsa:
                indexer += 2 * arch.dsa.index_n_heads * arch.dsa.index_head_dim * arch.dsa.own_indexer_share
                prefill_sparse += prefill
                decode_sparse += decode
            else:
                full += prefill
                decode_full += decode
    return _AttentionCoefficients(decode_full, full, window, decode_sparse, prefill_sparse, indexer)


def _redundant_copy_bytes(mp: MemoryPlan, catalog: Catalog, experts_per_gpu: float) -> float:
    """The redundant expert copies' weights a GPU holds (memory/expert_split.py): with no expert dispatch
    algorithm planned no token is routed to them, so a step does not read them."""
    par = mp.result.parallel
    if not par.expert_parallel:
        return 0.0
    spare = redundant_experts(mp.spec, catalog.engine(mp.result.engine),
                              ranks=par.tensor_parallel_size * par.data_parallel_size)
    return experts_per_gpu * (expert_slot_share(mp.spec, spare) - 1)


def _padding(rows: float, min_rows: float, blocks: tuple[float, ...]) -> float:
    """Rows a GEMM of ``rows`` rows computes beyond them: up to the smallest of ``blocks`` that holds
    them (none past the largest), or up to ``min_rows`` when no blocks are given."""
    if not blocks:
        return max(min_rows - rows, 0.0)
    return next((b - rows for b in blocks if b >= rows), 0.0)


def model_work(mp: MemoryPlan, catalog: Catalog) -> ModelWork:
    """Work coefficients for the deployment a memory plan describes (a model whose architecture is
    not published: the hidden size and depth calibration.yaml assumes for one)."""
    par = mp.result.parallel
    tp, pp = par.tensor_parallel_size, par.pipeline_parallel_size
    arch = mp.spec.architecture
    exact = arch is not None and not mp.spec.architecture_is_proxy  # a proxy layout stands in for the KV cache only
    w = mp.weights
    notes: list[str] = []
    routed_active = expert_params = 0.0  # weights: the routed experts a token passes through, and all of them
    if exact:
        params = count_params(arch)
        # a tied table is the lm_head too: every step multiplies by it, though count_params's active
        # (which leaves the embedding lookup out) does not count it
        lm_head = float(params.lm_head or params.embedding)
        active = float(params.active) + (0.0 if params.lm_head else lm_head)
        routed_active, expert_params = float(params.experts_active), float(params.experts)
    else:
        total = mp.spec.total_params or w.total_bytes * 8 / mp.gpu_format.bits_per_weight.value
        active = mp.spec.active_params or total
        lm_head = 0.0
        notes.append("active parameters from the model card; attention FLOPs from the proxy layout" if arch else
                     "active parameters from the model card; attention FLOPs not counted (no architecture)")
    shards = tp * pp * mp.expert_data_parallel  # the GPUs that split the routed experts (memory/expert_split.py)
    # the MTP layers a draft loads are held but not read by the target's step (draft_cost_ratio prices them)
    mtp_experts_gpu = w.mtp_expert_bytes / shards
    mtp_dense_gpu = (w.mtp_bytes - w.mtp_expert_bytes) / (tp * pp)
    experts_gpu = w.expert_bytes / shards - mtp_experts_gpu
    moe = arch.moe if arch else None
    num_experts, top_k = (moe.num_experts, moe.experts_per_token) if moe else (0, 0)
    if not w.expert_bytes and mp.spec.total_params and mp.spec.active_params and mp.spec.active_params < mp.spec.total_params:
        # a MoE whose expert split is not known: take k/E from the proxy (else calibration.yaml's assumed
        # split) and size the experts so that dense + k/E × experts equals the published active parameters
        if not num_experts:
            num_experts = int(catalog.constant("unpublished-expert-split-experts"))
            top_k = int(catalog.constant("unpublished-expert-split-experts-per-token"))
        share = (1 - mp.spec.active_params / mp.spec.total_params) / (1 - top_k / num_experts)
        experts_gpu = min(share, 1.0) * w.total_bytes / shards
        notes.append(f"expert weights sized from {fmt_billions(mp.spec.active_params, '.0f')} active of "
                     f"{fmt_billions(mp.spec.total_params, '.0f')} total, {top_k} of {num_experts} experts per token")
    if not expert_params and experts_gpu and num_experts:  # no parameter count: the experts' weights from their bytes
        expert_params = experts_gpu * shards * 8 / mp.gpu_format.bits_per_weight.value
        routed_active = expert_params * top_k / num_experts
    # a stage's average: the memory plan's figure is its fullest GPU's (plus what the engine adds to it);
    # the embedding table a stage holds as a lookup is not read whole per step
    fullest = max(mp.stage_weights, key=lambda s: s.bytes_per_gpu)
    # the plan's figure is net of the weights an offload keeps off the fullest GPU: those are taken off once,
    # below (host_offload), so what the engine adds is measured against the figure before the offload
    freed = mp.offload.gpu_bytes_freed if mp.offload is not None else 0.0
    engine_extra = mp.result.weights_bytes_per_gpu + freed - fullest.bytes_per_gpu
    if fullest.expert_bytes_per_gpu:  # what the engine adds follows the experts a GPU holds (vLLM's MXFP4 scales)
        engine_extra *= experts_gpu / fullest.expert_bytes_per_gpu
    lookup = sum(s.lookup_bytes_per_gpu for s in mp.stage_weights) / pp
    held = sum(s.bytes_per_gpu for s in mp.stage_weights) / pp + engine_extra
    copies_gpu = _redundant_copy_bytes(mp, catalog, w.expert_bytes / shards)  # held, never routed to
    dense_gpu = max(held - experts_gpu - copies_gpu - mtp_experts_gpu - mtp_dense_gpu - lookup, 0.0)
    host = host_offload(mp, tp * pp, catalog)
    if host is not None:  # what stays in host RAM is not read from the GPU's memory
        dense_gpu = max(dense_gpu - host.dense_bytes, 0.0)
        experts_gpu = max(experts_gpu - host.gpu_expert_bytes_freed, 0.0)
    act = catalog.constant("activation-bytes")
    dispatch = 0.0
    if moe is not None and exact:
        width = moe.latent_size or arch.hidden_size  # LatentMoE dispatches the latent, not the hidden state
        per_layer = moe.experts_per_token * (4 * width + arch.mlp_projections * moe.expert_intermediate_size) * act
        dispatch = per_layer * sum(moe.moe_layers) / (tp * pp)
    coef = _attention_coefficients(arch) if arch else _AttentionCoefficients()
    expert_copies = materialized_bytes_per_weight(mp, catalog, experts=True) if moe else 0.0
    if expert_copies and not mp.gpu_format.emulation(mp.accelerator, mp.result.engine, mp.result.engine_release):
        rule = mp.gpu_format.expert_emulation(mp.accelerator, mp.result.engine, mp.result.engine_release)
        notes.append(f"routed experts emulated: {rule.note}; every forward dequantizes each expert a GPU holds into a "
                     f"{rule.materialized_format} copy, and the step reads the copies of the experts it routes to")
    return ModelWork(
        active_params=active,
        lm_head_params=lm_head,
        dense_bytes_per_gpu=dense_gpu,
        expert_bytes_per_gpu=experts_gpu,
        num_experts=num_experts,
        experts_per_token=top_k,
        hidden_size=arch.hidden_size if arch else int(catalog.constant("unpublished-architecture-hidden-size")),
        num_layers=arch.num_layers if arch else int(catalog.constant("unpublished-architecture-layers")),
        tp=tp,
        pp=pp,
        attn_flops_per_token_ctx=coef.decode_full / pp,
        attn_prefill_flops_per_token_ctx=coef.prefill_full / pp,
        window_flops_per_token_ctx=coef.window / pp,
        window_tokens=arch.sliding_window if arch else None,
        activation_bytes=act,
        sparse_flops_per_token_ctx=coef.decode_sparse / pp,
        sparse_prefill_flops_per_token_ctx=coef.prefill_sparse / pp,
        sparse_topk=sparse_topk_tokens(arch) if arch else None,
        indexer_flops_per_token_ctx=coef.indexer / pp,
        moe_dispatch_bytes_per_token=dispatch,
        expert_parallel=tp * par.data_parallel_size if par.expert_parallel and moe else 1,
        expert_data_parallel=mp.expert_data_parallel if moe else 1,
        moe_layers=sum(moe.moe_layers) // pp if moe else 0,
        unpacked_weights_per_byte=8 / mp.gpu_format.bits_per_weight.value if mp.gpu_format.super_block_scales else 0.0,
        materialized_bytes_per_weight=materialized_bytes_per_weight(mp, catalog),
        materialized_expert_bytes_per_weight=expert_copies,
        head_bytes_per_gpu=w.head_bytes / tp,
        routed_active_params=routed_active,
        expert_params_per_gpu=expert_params / shards,
        hc_seams=hc_seams(arch) / pp if exact else 0.0,
        hc_bytes_per_token=hc_bytes_per_token(arch, act) / pp if exact else 0.0,
        residual_streams=arch.residual_streams if exact else 1,
        notes=(*notes, host.note) if host is not None else tuple(notes),
        host=host,
    )


def materialized_bytes_per_weight(mp: MemoryPlan, catalog: Catalog, experts: bool = False) -> float:
    """Bytes per quantized weight (of the routed experts where ``experts``) the format's emulated fallback
    writes and reads back each forward on the plan's accelerator and engine release (``Quantization.emulation``,
    ``expert_emulation``; zero where it runs a kernel)."""
    find = mp.gpu_format.expert_emulation if experts else mp.gpu_format.emulation
    rule = find(mp.accelerator, mp.result.engine, mp.result.engine_release)
    return 0.0 if rule is None else 2 * catalog.quantization(rule.materialized_format).bits_per_weight.value / 8


def hc_seams(arch: Architecture) -> int:
    """Hyper-connection seams of one forward pass: every attention and MLP sublayer mixes its input
    from the residual streams (pre) and its output back into them (post); engines that fuse one
    sublayer's post with the next one's pre run the same count of seams."""
    return 2 * arch.num_layers if arch.residual_streams > 1 else 0


def hc_bytes_per_token(arch: Architecture, activation_bytes: float) -> float:
    """Activations one token's hyper-connection seams move in a forward pass: at each, post reads the
    sublayer's output and the ``n`` streams and writes the streams back, pre reads them again and
    writes the next sublayer's input — ``(3n + 2)`` hidden-size vectors of ``activation_bytes`` values."""
    return hc_seams(arch) * (3 * arch.residual_streams + 2) * arch.hidden_size * activation_bytes


def with_draft_model(work: ModelWork, catalog: Catalog, draft_checkpoint: str | None) -> ModelWork:
    """``work`` drafting with the separate model ``draft_checkpoint`` names (None: as it is): the draft's active
    parameters, the lm_head a step multiplies by among them (the model card's where its architecture is not
    published), scale a step's maths for each draft token (``draft_cost_ratio``), and its decoder layers add their
    kernel launches (``ServingContext.draft_s``)."""
    if not draft_checkpoint:
        return work
    from inferplan.memory.resolve import resolve_model

    draft = resolve_model(catalog, draft_checkpoint, "draft_model")
    layers = len(draft.architecture.layer_kinds) if draft.architecture is not None else 0
    if draft.architecture is not None and not draft.architecture_is_proxy:
        params = count_params(draft.architecture)
        active = float(params.active) + (0.0 if params.lm_head else float(params.embedding))
    else:
        active = float(draft.active_params or draft.total_params or 0.0)
    return replace(work, draft_active_params=active, draft_layers=layers)
