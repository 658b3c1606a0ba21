"""Fit the named memory calibration constants on the measured points shipped in the catalogue.

``python -m inferplan.validation.calibrate`` prints the fitted values and their errors; the
values in ``catalog/data/calibration.yaml`` must equal them (a test checks), so a constant can
only change together with the data it is fitted on.

- vLLM activation peak = a × max_num_seqs × vocab + b × max_num_batched_tokens × hidden / TP,
  fitted by least absolute deviations (robust: one odd point cannot drag the rest, and none is
  dropped). Leave-one-out errors are reported. The V0 rules take the larger of the sampler pass and
  the forward's MLP peak instead: a × max_num_seqs × vocab or c × tokens × (hidden + MLP width / TP).
- Runtime (non-torch) overhead: median of the logged values, single-GPU and multi-GPU separately.
- Driver reserve: median of 1 − reported / marketed-as-GiB over HBM accelerators with both figures.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

import numpy as np

from inferplan.catalog.loader import Catalog, load_catalog
from inferplan.catalog.memory_rules import memory_rule
from inferplan.memory.budget_parts import mlp_width
from inferplan.memory.engine_budget import device_total_bytes
from inferplan.memory.settings import engine_settings
from inferplan.memory.resolve import resolve_model
from inferplan.units import GiB
from inferplan.validation.memory import deployment_for


@dataclass(frozen=True)
class ActivationFit:
    sampler_bytes_per_seq_vocab: float
    forward_bytes_per_token_hidden: float
    points: tuple[str, ...]
    residuals_gib: tuple[float, ...]  # in-sample, predicted − measured
    loo_residuals_gib: tuple[float, ...]  # leave-one-out


def _lad(x: np.ndarray, y: np.ndarray, iterations: int = 200) -> np.ndarray:
    """Least absolute deviations by iteratively reweighted least squares."""
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    for _ in range(iterations):
        w = 1.0 / np.maximum(np.abs(y - x @ coef), 1e-6 * np.abs(y).mean())
        sw = np.sqrt(w)
        coef, *_ = np.linalg.lstsq(x * sw[:, None], y * sw, rcond=None)
    return coef


def _profiled(catalog: Catalog, split: str, sampler_constant: str):
    """The vLLM records of a split that print an activation peak and are planned with a rule whose
    sampler term is ``sampler_constant``: each one's id, architecture, tensor-parallel size, the engine
    settings its release's rule profiles with, and the logged peak."""
    for point in catalog.memory_points:
        m = point.measured
        if point.split != split or point.engine != "vllm" or m.activation_bytes_per_gpu is None:
            continue
        if point.log_rank is not None:  # a non-driver rank's peak: no sampler, so not the peak the rule sizes
            continue
        d = deployment_for(point)
        rule = memory_rule(catalog, "vllm", d.engine_version)
        if rule.activation.sampler_constant_for(d.topk_topp_sampler) != sampler_constant:
            continue
        arch = resolve_model(catalog, d.model).architecture
        accel = catalog.accelerators.records[point.accelerator]
        total, _ = device_total_bytes(catalog, accel)
        s = engine_settings(d, catalog.engine("vllm"), accel, total, rule, point.settings.max_model_len)
        yield point.id, arch, point.tensor_parallel_size, s, m.activation_bytes_per_gpu.value


def _design(catalog: Catalog, split: str, sampler_constant: str):
    """Each profiled record's (rows × vocab, profiled tokens × hidden / TP) at the batch its release's
    rule profiles, and the logged peak."""
    ids, rows, ys = [], [], []
    for pid, arch, tp, s, y in _profiled(catalog, split, sampler_constant):
        ids.append(pid)
        rows.append([s.max_num_seqs * arch.vocab_size, s.max_num_batched_tokens * arch.hidden_size / tp])
        ys.append(y)
    return ids, np.array(rows, dtype=float), np.array(ys, dtype=float)


def activation_design(catalog: Catalog):
    """The calibration records behind the V1 activation coefficients."""
    return _design(catalog, "calibration", "vllm-sampler-bytes-per-seq-vocab")


def fit_vllm_activation(catalog: Catalog) -> ActivationFit:
    ids, x, y = activation_design(catalog)
    coef = _lad(x, y)
    loo = []
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        c = _lad(x[keep], y[keep])
        loo.append(float((x[i] @ c - y[i]) / GiB))
    return ActivationFit(
        sampler_bytes_per_seq_vocab=float(coef[0]),
        forward_bytes_per_token_hidden=float(coef[1]),
        points=tuple(ids),
        residuals_gib=tuple(float(r) for r in (x @ coef - y) / GiB),
        loo_residuals_gib=tuple(loo),
    )


V0_SAMPLER = "vllm-v0-sampler-bytes-per-seq-vocab"
V0_FORWARD = "vllm-v0-forward-bytes-per-token-width"


def v0_activation_design(catalog: Catalog):
    """The development field records of vLLM V0 releases behind the V0 activation coefficients: each
    one's rows × vocab, its profiled tokens × (hidden + MLP width / TP) and the logged peak."""
    ids, cells, widths, ys = [], [], [], []
    for pid, arch, tp, s, y in _profiled(catalog, "development", V0_SAMPLER):
        ids.append(pid)
        cells.append(s.max_num_seqs * arch.vocab_size)
        widths.append(s.max_num_batched_tokens * (arch.hidden_size + mlp_width(arch) / tp))
        ys.append(y)
    return ids, np.array(cells, dtype=float), np.array(widths, dtype=float), np.array(ys, dtype=float)


def fit_vllm_v0_activation(catalog: Catalog) -> ActivationFit:
    """The V0 rules' coefficients a and c of peak = max(a × rows × vocab, c × tokens × (hidden + MLP
    width / TP)), by least absolute deviations over the development records of V0 releases (held-out
    records are never used). The sum of |max(a·x, c·w) − y| is piecewise linear in (a, c): its minimum
    sits where two records are met exactly, so the candidates are a = y/x and c = y/w of each record."""
    ids, x, w, y = v0_activation_design(catalog)

    def cost(a: float, c: float) -> float:
        return float(np.abs(np.maximum(a * x, c * w) - y).sum())

    a, c = min(((a, c) for a in y / x for c in y / w), key=lambda ac: (cost(*ac), ac))
    residuals = (np.maximum(a * x, c * w) - y) / GiB
    return ActivationFit(sampler_bytes_per_seq_vocab=float(a), forward_bytes_per_token_hidden=float(c),
                         points=tuple(ids), residuals_gib=tuple(float(r) for r in residuals), loo_residuals_gib=())


V017_SAMPLER = "vllm-v017-sampler-bytes-per-seq-vocab"


def fit_vllm_v017_sampler(catalog: Catalog) -> ActivationFit:
    """The 0.17+ rules' sampler coefficient, by least absolute deviations over the development records
    of those releases, with the forward coefficient held at the V1 calibration value (the Triton
    top-k/top-p kernel changed the sampler pass only; held-out records are never used)."""
    ids, x, y = _design(catalog, "development", V017_SAMPLER)
    forward = catalog.constant("vllm-forward-bytes-per-token-hidden")
    rest = y - forward * x[:, 1]
    coef = _lad(x[:, :1], rest)
    fitted = np.array([coef[0], forward])
    return ActivationFit(sampler_bytes_per_seq_vocab=float(coef[0]), forward_bytes_per_token_hidden=forward,
                         points=tuple(ids), residuals_gib=tuple(float(r) for r in (x @ fitted - y) / GiB),
                         loo_residuals_gib=())


def fit_runtime_overhead(catalog: Catalog) -> tuple[float, float]:
    single, multi = [], []
    for point in catalog.memory_points:
        q = point.measured.non_torch_bytes_per_gpu
        if q is not None and point.split == "calibration":
            (single if point.tensor_parallel_size == 1 else multi).append(q.value)
    return statistics.median(single), statistics.median(multi)


def fit_driver_reserve(catalog: Catalog) -> tuple[float, tuple[str, ...]]:
    fractions, ids = [], []
    for accel in catalog.accelerators:
        # HBM cards only: a GDDR board's reported total also loses its ECC share (on by default on
        # datacenter GDDR6) and a desktop's display, so those totals are measured per card, not pooled
        hbm = (accel.memory_type or "").upper().startswith("HBM")
        if accel.memory_reported_bytes is not None and not accel.unified_memory and hbm:
            marketed_gib = accel.memory_bytes.capacity_gib * GiB
            fractions.append(1 - accel.memory_reported_bytes.value / marketed_gib)
            ids.append(accel.id)
    return statistics.median(fractions), tuple(ids)


def main() -> None:  # pragma: no cover - a maintenance script
    catalog = load_catalog()
    act = fit_vllm_activation(catalog)
    print(f"vllm-sampler-bytes-per-seq-vocab = {act.sampler_bytes_per_seq_vocab:.3f}")
    print(f"vllm-forward-bytes-per-token-hidden = {act.forward_bytes_per_token_hidden:.3f}")
    for pid, r, loo in zip(act.points, act.residuals_gib, act.loo_residuals_gib):
        print(f"  {pid:36s} residual {r:+.3f} GiB   leave-one-out {loo:+.3f} GiB")
    v0 = fit_vllm_v0_activation(catalog)
    print(f"vllm-v0-sampler-bytes-per-seq-vocab = {v0.sampler_bytes_per_seq_vocab:.2f}")
    print(f"{V0_FORWARD} = {v0.forward_bytes_per_token_hidden:.3f}")
    for pid, r in zip(v0.points, v0.residuals_gib):
        print(f"  {pid:36s} residual {r:+.3f} GiB")
    v017 = fit_vllm_v017_sampler(catalog)
    print(f"{V017_SAMPLER} = {v017.sampler_bytes_per_seq_vocab:.2f}")
    for pid, r in zip(v017.points, v017.residuals_gib):
        print(f"  {pid:36s} residual {r:+.3f} GiB")
    single, multi = fit_runtime_overhead(catalog)
    print(f"runtime-overhead-bytes-single-gpu = {single:.0f} ({single / GiB:.3f} GiB)")
    print(f"runtime-overhead-bytes-multi-gpu = {multi:.0f} ({multi / GiB:.3f} GiB)")
    reserve, ids = fit_driver_reserve(catalog)
    print(f"driver-reserved-fraction = {reserve:.5f} from {', '.join(ids)}")


if __name__ == "__main__":  # pragma: no cover
    main()
