"""The base of what ``deploy`` returns: a launch command, script, file or plan.

These are outputs, built by this package from a checked ``Deployment``; they never pass an input's
checks (``inputs.Input``: its text-length limit, its refusal of control characters), which guard what
a person sends. A disaggregated deployment's launch script runs to many thousand characters.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Output(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
