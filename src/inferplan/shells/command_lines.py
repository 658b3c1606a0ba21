"""A launch script's lines broken to a terminal's width with shell line continuations, so a long
command reads on a narrow screen and still pastes into a shell as one command."""

from __future__ import annotations

import re

# a shell word: runs of unquoted characters and whole quoted strings (no quote is ever split)
WORD = re.compile(r"""(?:[^\s'"]+|'[^']*'|"(?:[^"\\]|\\.)*")+""")
INDENT = "    "


def continued(line: str, width: int) -> list[str]:
    """``line`` as one or more lines of at most ``width`` characters where its words allow: each but the
    last ends in `` \\`` (the shell joins them back), the next indented; a comment, or a line that already
    fits, stays whole, as does a single word longer than the width."""
    if len(line) <= width or line.lstrip().startswith("#"):
        return [line]
    lead = line[: len(line) - len(line.lstrip())]
    if not re.fullmatch(rf"\s*{WORD.pattern}(?:\s+{WORD.pattern})*\s*", line):  # an unbalanced quote: as typed
        return [line]
    words = _flags_with_values(WORD.findall(line))
    out, current = [], lead + words[0]
    for word in words[1:]:
        if len(current) + 1 + len(word) + 2 > width:
            out.append(current + " \\")
            current = lead + INDENT + word
        else:
            current += " " + word
    return [*out, current]


def _flags_with_values(words: list[str]) -> list[str]:
    """``words`` with each flag joined to the value after it (``--port 8000``), so no break parts them."""
    out: list[str] = []
    for word in words:
        if out and out[-1].startswith("-") and " " not in out[-1] and not word.startswith("-") and word not in ("&", "|", "&&", "\\"):
            out[-1] += " " + word
        else:
            out.append(word)
    return out
