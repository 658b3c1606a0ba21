"""Catalogue sections as registries: records by id, found by id, alias or the whole words of a name.

``Registry.get`` resolves what a user typed ("H100", "Qwen3 235B", "rtx-4090") to one record, or
raises the caller's error naming the field: ambiguous names list the candidates, unknown ones the
closest ids.
"""

from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import BaseModel

from inferplan.errors import AmbiguousNameError

T = TypeVar("T", bound=BaseModel)


_SEPARATORS = re.compile(r"[\s\-_.]+")


@functools.lru_cache(maxsize=4096)
def normalise_name(name: str) -> str:
    """Lower case, no spaces, hyphens, underscores or dots: 'RTX 4090' == 'rtx-4090'."""
    return _SEPARATORS.sub("", name.strip().lower())


@dataclass(frozen=True)
class Registry(Generic[T]):
    """Records of one kind, by id, with alias lookup."""

    kind: str
    records: dict[str, T]

    def __iter__(self):
        return iter(self.records.values())

    def __len__(self) -> int:
        return len(self.records)

    def __contains__(self, key: str) -> bool:
        return key in self.records

    def exact(self, name: str) -> list[T]:
        """Records whose id, name or an alias is ``name`` (normalised)."""
        if name in self.records:
            return [self.records[name]]
        return list(self._by_name.get(normalise_name(name), ()))

    @functools.cached_property
    def _by_name(self) -> dict[str, tuple[T, ...]]:
        """Normalised id, name and aliases -> records, built once per registry."""
        built: dict[str, list[T]] = {}
        for r in self.records.values():
            for n in _names(r):
                built.setdefault(n, []).append(r)
        return {n: tuple(rs) for n, rs in built.items()}

    @functools.cached_property
    def word_lists(self) -> tuple[tuple[T, list[tuple[str, ...]]], ...]:
        """Each record with its id, name and aliases split into words, built once per registry."""
        return tuple((r, _word_lists(r)) for r in self.records.values())

    def closest(self, name: str, n: int = 5) -> list[str]:
        """The ids whose id, name or an alias reads most like ``name`` (an alias "H100" finds h100-sxm
        for "h10"), closest first."""
        hits = difflib.get_close_matches(normalise_name(name), list(self._by_name), n=4 * n, cutoff=0.6)
        return list(dict.fromkeys(r.id for hit in hits for r in self._by_name[hit]))[:n]

    def get(self, name: str, *, field_name: str, error: type[Exception]) -> T:
        """Resolve an id or alias; an ambiguous or unknown name raises with the candidates."""
        wanted = normalise_name(name)
        if not wanted:
            kind = self.kind[:-1] if self.kind.endswith("s") else self.kind
            raise error(f"name {'an' if kind[:1] in 'aeiou' else 'a'} {kind}, not a blank", field=field_name)
        exact = self.exact(name)
        if len(exact) == 1:
            return exact[0]
        # whole words of a name find it (H100 -> h100-sxm, m3 -> minimax-m3, q8 -> q8_0); a part of a
        # word does not (fp3 is not fp32, qwen3-2 not qwen3-235b-a22b, x not fx-eur-usd)
        words = word_list(name)
        partial = exact or [r for r, lists in self.word_lists if any(_contains_run(ws, words) for ws in lists)]
        if len(partial) == 1:
            return partial[0]
        if partial:
            matched = sorted(r.id for r in partial)
            ids = ", ".join(matched[:AMBIGUOUS_LISTED]) + (f", … ({len(matched)} in all)" if len(matched) > AMBIGUOUS_LISTED else "")
            raise AmbiguousNameError(
                f"{name!r} matches several {self.kind}: {ids}", field=field_name, allowed=ids,
                candidates=tuple(matched))
        kind = self.kind[:-1] if self.kind.endswith('s') else self.kind
        close = self.closest(name)
        listed = close or sorted(self.records)[:MAX_LISTED]
        more = f", the closest of {len(self.records)}" if close else \
            "" if len(self.records) <= MAX_LISTED else f", … ({len(self.records)} in all)"
        raise error(f"no {kind} named {name!r}; see `inferplan catalog list {self.kind.replace(' ', '-')}`",
                    field=field_name, allowed=", ".join(listed) + more)


_WORD_SEPARATORS = re.compile(r"[\s\-_./()×,]+")
MAX_LISTED = 12  # ids an unknown-name error lists when none is close (then how many there are)
AMBIGUOUS_LISTED = 12  # candidates an ambiguous name lists, then how many there are


def word_list(text: str) -> tuple[str, ...]:
    return tuple(w for w in _WORD_SEPARATORS.split(text.strip().lower()) if w)


def record_aliases(record: BaseModel) -> tuple[str, ...]:
    """A record's aliases, a model card's Ollama tags among them (each tag names the model)."""
    return (*getattr(record, "aliases", ()), *(t.tag for t in getattr(record, "ollama_tags", ())))


def _word_lists(record: BaseModel) -> list[tuple[str, ...]]:
    """The words of a record's id, name and each alias, in order."""
    return [word_list(t) for t in (record.id, getattr(record, "name", ""), *record_aliases(record))]


def _contains_run(words: tuple[str, ...], run: tuple[str, ...]) -> bool:
    """``run`` appears in ``words`` as consecutive whole words."""
    return bool(run) and any(words[i:i + len(run)] == run for i in range(len(words) - len(run) + 1))


def _names(record: BaseModel) -> set[str]:
    names = {normalise_name(record.id)}
    if hasattr(record, "name"):
        names.add(normalise_name(record.name))
    names.update(normalise_name(a) for a in record_aliases(record))
    return names
