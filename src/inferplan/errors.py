"""The one error hierarchy. Shells map every ``InferplanError`` to exit code 2 / HTTP 422."""

from __future__ import annotations


class InferplanError(Exception):
    """Base of every error inferplan raises on purpose.

    ``field`` names the input at fault as the domain knows it (a Deployment or Workload field such
    as ``max_model_len``, a config key, a scenario path) so that a shell can say exactly what to
    change, in its own terms (a CLI flag, a JSON path); ``allowed`` says what would be accepted.

    ``names`` lists the inputs the message and ``allowed`` name in their prose, as the domain spells
    them, for a shell to say each in its terms (``speculative_tokens`` as ``--speculative-tokens``).
    Left out, every word spelled as an input with an underscore is one; a message where such a word
    is a value (the speculative method ``draft_model``) lists its inputs, and only they are said so.
    """

    def __init__(self, message: str, *, field: str | None = None, allowed: str | None = None, located: bool = False,
                 names: tuple[str, ...] | None = None):
        self.field = field
        self.allowed = allowed
        self.names = names
        self.located = located  # the message already says where (file:line: key:)
        super().__init__(message)

    def describe(self) -> str:
        parts = []
        if self.field and not self.located:
            parts.append(f"{self.field}: ")
        parts.append(str(self))
        if self.allowed:
            parts.append(f" (allowed: {self.allowed})")
        return "".join(parts)


class CatalogError(InferplanError):
    """The shipped or a user-supplied catalogue file is malformed or unsourced."""


class UnknownModelError(InferplanError):
    """No model with that id or alias is in the catalogue."""


class UnknownHardwareError(InferplanError):
    """No accelerator or system with that id or alias is in the catalogue."""


class AmbiguousNameError(InferplanError):
    """A name matches more than one catalogue entry; the candidates are listed (``candidates``: all of
    their ids, where the message cuts the list short)."""

    def __init__(self, message: str, *, candidates: tuple[str, ...] = (), **kwargs):
        super().__init__(message, **kwargs)
        self.candidates = candidates


class ConfigImportError(InferplanError):
    """A Hugging Face config.json could not be turned into a model architecture."""


class InvalidScenarioError(InferplanError):
    """A deployment or scenario input is out of range or inconsistent."""


class LinkReachError(InvalidScenarioError):
    """Tensor or expert parallelism wider than the GPUs' links reach, with no network known beyond
    (``performance.network``); its field is the parallel size at fault. A caller that packs cells into a
    host skips such a cell by this type, apart from other refusals of the same field."""


class ConflictError(InferplanError):
    """Saving would replace something that exists: the caller has to say it wants that."""


class UnsupportedSettingError(InferplanError):
    """The chosen engine has no way to take a planned setting (expert parallel on llama.cpp ...)."""


class OutOfTimeError(InferplanError):
    """A computation stopped at its time budget, or because whoever asked for it has gone (HTTP 503)."""
