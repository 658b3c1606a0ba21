"""A launch script's lines broken to a terminal's width with shell line continuations, so a long
command reads on a narrow screen and still pastes into a shell as one command."""

from __future__ import annotations

import re
from collections.abc import Iterator

# a shell word: unquoted characters (a backslash with the character it escapes) and whole quoted strings,
# one character per alternative so a line that does not parse fails fast
WORD = re.compile(r"""(?:[^\s'"\\]|\\.|'[^']*'|"(?:[^"\\]|\\.)*")+""")
WORDS = re.compile(rf"\s*{WORD.pattern}(?:\s+{WORD.pattern})*\s*")
HEREDOC = re.compile(r"""<<-?\s*(['"]?)(\w+)\1\s*$""")  # a line that opens a here-document, and its delimiter
INDENT = "    "


def script_lines(text: str, width: int) -> Iterator[str]:
    """Each line of the script ``text`` as ``continued`` breaks it, a here-document's body passed through
    whole (a continuation there would be written into the file)."""
    until: str | None = None
    for line in text.splitlines():
        if until is not None:
            yield line
            until = None if line.strip() == until else until
            continue
        opens = HEREDOC.search(line)
        until = opens.group(2) if opens else None
        yield from continued(line, width)


def continued(line: str, width: int) -> list[str]:
    """``line`` as one or more lines of at most ``width`` characters where its words allow: each but the
    last ends in `` \\`` (the shell joins them back), the next indented; a flag stays with its value, a
    trailing comment on its line (a continuation does not continue a comment). A comment line, a line that
    already fits or one that does not parse as shell words stays whole."""
    if len(line) <= width or line.lstrip().startswith("#") or not WORDS.fullmatch(line):
        return [line]
    lead = line[: len(line) - len(line.lstrip())]
    words = _flags_with_values(WORD.findall(line))
    out, current = [], lead + words[0]
    for at, word in enumerate(words[1:], start=1):
        if word.startswith("#"):  # a comment runs to the end of the line: no break inside it
            current += " " + " ".join(words[at:])
            break
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
        if (out and out[-1].startswith("-") and " " not in out[-1] and not word.startswith(("-", "#"))
                and word not in ("&", "|", "&&", "||", ";")):
            out[-1] += " " + word
        else:
            out.append(word)
    return out
