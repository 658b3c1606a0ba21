"""KTransformers' CPU expert time per step, priced by the release and kernel method's path
(catalog/data/kt_cpu_paths.yaml; memory/kt_offload.py says which experts sit in host RAM).

A step's CPU time is the longer of streaming the experts its tokens touch from host DRAM and
computing them, plus, where the path states it, the hand-over of every MoE layer (the hidden state
copied to host memory, the CPU task submitted and waited for, its output copied back). Streaming
runs at the host's DRAM bandwidth times the decode kernel's efficiency; with one copy of the
experts on a multi-socket host (``single-copy``) every socket's threads read the memory of the node
holding it, so one socket's share of the bandwidth serves them all, while a copy per node
(``replicate``, v0.2 USE_NUMA=1) or a slice per node (``shard``, kt-kernel's NUMA-aware tensor
parallelism) keeps every read local. Computing runs at the kernel's measured
throughput per socket at the step's tokens per expert (a 1K-token prompt gives each of DeepSeek-V3's
256 experts about 32 tokens), times the sockets. Without Expert Deferral (v0.2, v0.3-preview) the
CPU's time adds to the GPU's; with it the two overlap.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

from inferplan.catalog.loader import Catalog
from inferplan.memory.kt_host import KtHost


@dataclass(frozen=True)
class KtCpu:
    path_id: str
    overlapped: bool  # Expert Deferral: the CPU's work runs alongside the GPU's
    read_bytes_per_s: float  # the experts' DRAM reads, whole host, after NUMA layout and kernel efficiency
    rate_points: tuple[tuple[float, float], ...]  # (tokens per expert, FLOP/s of every socket), ascending
    tokens_per_expert_per_token: float
    layer_handover_s: float = 0.0  # each MoE layer's GPU-CPU round trip when the two take turns (kt_cpu_paths.yaml)

    def flop_per_s(self, tokens: float) -> float:
        """The host's expert throughput for a step of ``tokens`` tokens: the measured curve, log-log
        between its points, held beyond its last (and at its first below it)."""
        tpe = tokens * self.tokens_per_expert_per_token
        xs = [x for x, _ in self.rate_points]
        if tpe <= xs[0]:
            return self.rate_points[0][1]
        if tpe >= xs[-1]:
            return self.rate_points[-1][1]
        i = bisect.bisect_right(xs, tpe)
        (x0, y0), (x1, y1) = self.rate_points[i - 1], self.rate_points[i]
        t = (math.log(tpe) - math.log(x0)) / (math.log(x1) - math.log(x0))
        return math.exp(math.log(y0) + t * (math.log(y1) - math.log(y0)))

    def expert_s(self, expert_bytes: float, flops_per_token: float, tokens: float, touched_share: float) -> float:
        """CPU time of a step of ``tokens`` tokens that touches this share of the host's experts."""
        read_s = expert_bytes * touched_share / self.read_bytes_per_s
        if tokens * self.tokens_per_expert_per_token < self.rate_points[0][0]:
            return read_s  # below the kernel benchmark's first point the step streams its experts (decode)
        return max(read_s, tokens * flops_per_token / self.flop_per_s(tokens))


def kt_cpu(host: KtHost, catalog: Catalog, dram_bytes_per_s: float) -> KtCpu:
    """The CPU side of a KTransformers deployment on a host of ``dram_bytes_per_s`` (every socket's DRAM)."""
    path = host.path
    efficiency = (path.decode_read_efficiency.value if path.decode_read_efficiency is not None
                  else catalog.constant("host-memory-read-efficiency"))
    reachable = dram_bytes_per_s / host.sockets if path.numa == "single-copy" else dram_bytes_per_s
    scale = path.prefill_rate_scale.value if path.prefill_rate_scale is not None else 1.0
    points = tuple((p.tokens_per_expert, p.flop_per_s.value * scale * host.sockets) for p in path.prefill_flop_per_s)
    handover = path.layer_handover_s.value if path.layer_handover_s is not None else 0.0
    return KtCpu(path.id, path.expert_deferral, reachable * efficiency, points, host.tokens_per_expert_per_token, handover)
