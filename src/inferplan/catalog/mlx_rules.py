"""MLX's prompt-processing working set, as data (a field of an mlx ``MemoryRule``).

MLX encodes the operations of a graph into Metal command buffers and keeps every input array of
an encoded operation alive until the command buffer that ran it completes. A buffer is committed
once it holds more than ``max_ops`` dispatches or more than ``max_mib`` MiB of distinct input
arrays (weights, KV cache and activations alike), and evaluation waits for the oldest buffer once
more than ``max_active_tasks`` committed buffers are in flight. A prompt chunk keeps the GPU busy
far longer than encoding takes, so the activations held by that many buffers are live at once:
this is the prefill working set ``mx.get_peak_memory()`` sees above the weights and the KV cache.
The limits depend on the GPU's class (MLX reads it from the Metal architecture name); the op
sequence they apply to is mlx-lm's transformer block (``memory/mlx_prefill.py``).
"""

from __future__ import annotations

from pydantic import Field

from inferplan.catalog.schema import Frozen


class CommandBufferLimits(Frozen):
    """When MLX commits a command buffer on one class of Apple GPU."""

    max_ops: int = Field(ge=1)  # committed once it holds more dispatches than this
    max_mib: float = Field(gt=0)  # ... or more MiB of distinct input arrays than this
    # the accelerators.yaml ids of the GPUs of this class (empty: every GPU no other class lists)
    accelerators: tuple[str, ...] = ()


class InFlightPrefill(Frozen):
    """MLX's prefill working set: the activations that the in-flight command buffers keep alive."""

    max_active_tasks: int = Field(ge=1)  # committed buffers in flight before evaluation waits for one
    activation_bytes: float = Field(gt=0)  # bytes per activation element (the model's bf16/f16)
    default_limits: CommandBufferLimits
    limits: tuple[CommandBufferLimits, ...] = ()  # by GPU class
    sources: tuple[str, ...] = Field(min_length=1)

    def limits_for(self, accelerator: str | None) -> CommandBufferLimits:
        """The commit limits of the GPU class ``accelerator`` belongs to (the default when unlisted)."""
        return next((c for c in self.limits if accelerator in c.accelerators), self.default_limits)

    def accelerator_ids(self) -> tuple[str, ...]:
        return tuple(a for c in self.limits for a in c.accelerators)
