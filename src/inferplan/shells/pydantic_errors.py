"""What a pydantic validation error says is allowed, for the ``allowed`` part of both shells' errors.

A field typed as a fixed set of values (``Literal["flashinfer", "pytorch"]``) is refused by pydantic
with the set in its context (``"'flashinfer' or 'pytorch'"``); the CLI's one line and the API's 422
give it as ``allowed`` like every other refusal.
"""

from __future__ import annotations

import re


def allowed_by(error: dict) -> str | None:
    """The values a pydantic error lists as allowed (``"'a', 'b' or 'c'"`` -> ``"a, b, c"``), else None."""
    if error.get("type") != "literal_error":
        return None
    expected = str((error.get("ctx") or {}).get("expected", ""))
    values = [v.strip().strip("'\"") for v in re.split(r",| or ", expected) if v.strip()]
    return ", ".join(values) or None
