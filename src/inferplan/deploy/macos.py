"""A Mac's GPU memory limit in a launch: a deployment stating ``wired_limit_mb`` runs where macOS lets the Apple
GPU wire that much, so its script sets it first (``sudo sysctl iogpu.wired_limit_mb=N``; calibration.yaml source
``cal-mlx-set-wired-limit``: MLX's docs give the command)."""

from __future__ import annotations

from inferplan.inputs.deployment import Deployment

WIRED_LIMIT_SYSCTL = "iogpu.wired_limit_mb"


def wired_limit_step(d: Deployment) -> tuple[str, ...]:
    """The shell line that raises the GPU's limit to the stated one (none where none is stated)."""
    return (f"sudo sysctl {WIRED_LIMIT_SYSCTL}={d.wired_limit_mb}",) if d.wired_limit_mb is not None else ()


def wired_limit_note(d: Deployment) -> tuple[str, ...]:
    """What the line does, for the launch's notes."""
    if d.wired_limit_mb is None:
        return ()
    return (f"{WIRED_LIMIT_SYSCTL}={d.wired_limit_mb}: macOS lets the GPU wire {d.wired_limit_mb:,} MiB of unified "
            "memory, as the plan assumes (set on every Mac of the deployment)",)
