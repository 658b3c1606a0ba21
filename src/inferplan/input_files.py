"""Reading a file a person points inferplan at: a scenario YAML, a config.json or params.json, a
catalogue YAML.

Every such read goes through ``read_text`` (a regular file of at most ``MAX_FILE_BYTES``, UTF-8)
and its parse through ``parse_json`` or ``check_yaml_depth`` (at most ``MAX_NESTING_DEPTH`` levels
of lists and mappings), so that ``/dev/zero`` is refused instead of read for ever and
``[[[[…]]]]`` gets one line naming the file instead of a RecursionError traceback.

A request trace and a benchmark's result file may come compressed (``FILE.csv.gz``, ``.xz``, ``.bz2``, a ``.zip``
of one file; ``input_codecs``): ``text_of`` reads such bytes decompressed, told by their first bytes rather than
the file's name, and refuses what does not decompress to text; ``refuse_compressed_text`` names a compressed file
whose bytes reached it as text (an API client's upload), since the bytes it would take are lost by then: a page or
client sends such a file's bytes base64-encoded (``bytes_of_base64``).
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import stat
from pathlib import Path
from typing import Any, Literal

from inferplan.errors import InferplanError
from inferplan.input_codecs import CODECS, COMPRESSIONS, codec_of, decompressed

# The largest shipped catalogue file is 0.14 MB and a config.json a few kB; 4 MiB leaves room for
# a config that lists every module it leaves unquantized and stops a multi-gigabyte mistake.
MAX_FILE_BYTES = 4 * 2**20
# model.safetensors.index.json maps every tensor to its shard: tens of thousands of lines for a
# trillion-parameter mixture of experts.
MAX_INDEX_BYTES = 64 * 2**20
# A scenario nests 3 levels, a config.json 4, a catalogue file 6.
MAX_NESTING_DEPTH = 32

def read_bytes(path: Path, *, field: str, error: type[InferplanError], max_bytes: int | None = None) -> bytes:
    """The bytes of a regular file of at most ``max_bytes`` (default ``MAX_FILE_BYTES``); anything
    else raises ``error`` naming ``field`` and the file."""
    max_bytes = MAX_FILE_BYTES if max_bytes is None else max_bytes
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise error(f"{path} is not a regular file", field=field, allowed="a file (not a device, pipe or folder)")
        if info.st_size > max_bytes:
            raise error(f"{path} has {info.st_size} bytes", field=field, allowed=f"a file of at most {max_bytes} bytes")
        with open(path, "rb") as fh:
            data = fh.read(max_bytes + 1)  # the file may have grown since stat
    except OSError as exc:
        raise error(f"cannot read {path}: {exc.strerror}", field=field,
                    allowed="a file that exists and that inferplan's user may read") from None
    if len(data) > max_bytes:
        raise error(f"{path} has more than {max_bytes} bytes", field=field, allowed=f"a file of at most {max_bytes} bytes")
    return data


def read_text(path: Path, *, field: str, error: type[InferplanError], max_bytes: int | None = None) -> str:
    """``read_bytes`` decoded as UTF-8."""
    try:
        return read_bytes(path, field=field, error=error, max_bytes=max_bytes).decode("utf-8")
    except UnicodeDecodeError:
        raise error(f"{path} is not UTF-8 text", field=field, allowed="a UTF-8 text file") from None


def text_of(data: bytes, *, where: str, field: str, error: type[InferplanError], max_bytes: int,
            encoding: str = "utf-8") -> str:
    """A file's bytes as text: decompressed first when they open as a compressed file's (``input_codecs``; at most
    ``max_bytes`` of text, so a small file that inflates to gigabytes is refused, not read); text holding NUL bytes,
    as an archive does, is no text."""
    codec = codec_of(data)
    if codec is not None:
        data = decompressed(data, codec, where=where, field=field, error=error, max_bytes=max_bytes)
    what = f"its {codec.name} content" if codec else "it"
    allowed = f"UTF-8 text, or that text compressed with {COMPRESSIONS}"
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise error(f"{where}: {what} is not UTF-8 text (byte {exc.start} is not)", field=field, allowed=allowed) from None
    refuse_compressed_text(text, where=where, field=field, error=error)  # before its header's NUL bytes
    if "\x00" in text:
        raise error(f"{where}: {what} holds NUL bytes, not text (an archive such as .tar.gz is not read: extract the "
                    "file from it)", field=field, allowed=allowed)
    return text


def refuse_compressed_text(text: str, *, where: str, field: str, error: type[InferplanError]) -> None:
    """Refuse text that is a compressed file's bytes read as UTF-8 (its invalid bytes lost to the replacement
    character, as a browser's ``file.text()`` reads them)."""
    codec = next((c for c in CODECS if c.starts_as_text(text)), None)
    if codec is not None:
        raise error(f"{where}: a {codec.name}-compressed file's bytes sent as text, which cannot be decompressed: "
                    f"send the file's bytes base64-encoded, or decompress it first ({codec.command}) and send its "
                    "text, or give the file to the command line, which reads it", field=field,
                    allowed="the file's text, uncompressed, or its bytes base64-encoded")


# how an upload holds a file (its ``encoding``): its text, or its bytes base64-encoded, as a compressed file is sent
SentAs = Literal["text", "base64"]
SENT_AS = "how the file is held: its text, or its bytes base64-encoded (RFC 4648), compressed or not"
COMPRESSED_BYTES = f"the file's text, or with encoding base64 its bytes (a compressed file's: {COMPRESSIONS})"


def bytes_of_base64(text: str, *, where: str, field: str, error: type[InferplanError]) -> bytes:
    """A file's bytes sent base64-encoded (RFC 4648, section 4), as a page or an API client sends a compressed file:
    whitespace around it (the newline ``base64 -w0 FILE > f`` ends its line with) is dropped, inside it refused."""
    try:
        return base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError) as exc:
        wrapped = " (wrapped over several lines)" if "\n" in text.strip() else ""
        raise error(f"{where}: not base64{wrapped} ({exc})", field=field,
                    allowed="the file's bytes as base64 on one line (base64 -w0 FILE; RFC 4648: A-Z a-z 0-9 + /, "
                            "padded with =)") from None


def _too_deep(where: str, field: str, error: type[InferplanError]) -> InferplanError:
    return error(f"{where}: nested more than {MAX_NESTING_DEPTH} levels deep", field=field, located=field == where,
                 allowed=f"at most {MAX_NESTING_DEPTH} levels of nested lists and mappings")


def check_depth(data: Any, *, where: str, field: str, error: type[InferplanError]) -> None:
    """Refuse parsed data with more than ``MAX_NESTING_DEPTH`` levels of lists and mappings."""
    level = [(data, 0)]
    while level:  # iterative: the check itself must not recurse
        value, depth = level.pop()
        if isinstance(value, (dict, list)):
            if depth >= MAX_NESTING_DEPTH:
                raise _too_deep(where, field, error)
            level.extend((v, depth + 1) for v in (value.values() if isinstance(value, dict) else value))


def parse_json(text: str | bytes, *, where: str, field: str, error: type[InferplanError]) -> Any:
    """JSON text as Python values, refused when not JSON or nested too deeply."""
    try:
        data = json.loads(text)
    except RecursionError:
        raise _too_deep(where, field, error) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise error(f"{where} is not valid JSON: {exc}", field=field, allowed="JSON text (RFC 8259)") from None
    check_depth(data, where=where, field=field, error=error)
    return data


def read_json(path: Path, *, field: str, error: type[InferplanError], max_bytes: int | None = None) -> Any:
    """A bounded JSON file (``read_bytes`` then ``parse_json``)."""
    data = read_bytes(path, field=field, error=error, max_bytes=max_bytes)
    return parse_json(data, where=str(path), field=field, error=error)


def check_yaml_depth(text: str, *, where: str, field: str, error: type[InferplanError]) -> None:
    """Refuse YAML text with more than ``MAX_NESTING_DEPTH`` levels before a (recursive) loader
    builds it. Other syntax errors are left to the loader, which reports them with their line."""
    import yaml  # imported when YAML is read, not at every start

    depth = 0
    try:
        # libyaml's event parser is iterative and fast
        for event in yaml.parse(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_NESTING_DEPTH:
                    raise _too_deep(where, field, error)
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.YAMLError as exc:
        if "maximum nesting depth" in str(exc):  # libyaml stops at 1000 levels, scanning ahead in [[[…
            raise _too_deep(where, field, error) from None
