"""The compressions a user's file may come in, told by its first bytes (never by its name), and their
decompression under a cap on the bytes it yields, so that a small file inflating to gigabytes is refused.

Each codec is data: its name, the magic bytes its specification opens every file with, and how the standard
library opens it. zstd has no reader in the standard library of the Pythons inferplan runs on, nor among its
dependencies: a zstd file is named and refused, with the command that decompresses it.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

from inferplan.errors import InferplanError


class ArchiveMembers(ValueError):
    """A zip holding other than one file: its members' names."""

    def __init__(self, names: list[str]) -> None:
        super().__init__(names)
        self.names = names


def _zip_member(fh: io.BytesIO) -> IO[bytes]:
    archive = zipfile.ZipFile(fh)
    files = [i for i in archive.infolist() if not i.is_dir()]
    if len(files) != 1:
        raise ArchiveMembers([i.filename for i in files])
    return archive.open(files[0])


@dataclass(frozen=True)
class Codec:
    name: str
    suffix: str  # the name's ending such a file usually has (passed over when a name tells a format)
    magics: tuple[bytes, ...]  # a file of this codec starts with one of these
    open: Callable[[io.BytesIO], IO[bytes]] | None  # None: named, not read
    command: str  # how a person decompresses such a file

    def starts(self, data: bytes) -> bool:
        return data.startswith(self.magics)

    def starts_as_text(self, text: str) -> bool:
        """Whether ``text`` is such a file's bytes read as UTF-8, invalid bytes replaced (a browser's file.text())."""
        return text.startswith(tuple(m.decode("utf-8", errors="replace") for m in self.magics))


# bzip2's "BZh", its block size digit, then the first block's magic (pi's digits) or the end of an empty stream's
# (sqrt(pi)'s), both 48 bits: bzip2 1.0.8's source, bzlib_private.h (BZ_HDR_*) and compress.c
_BZIP2 = tuple(b"BZh" + bytes([d]) + block for d in b"123456789" for block in (b"1AY&SY", b"\x17rE8P\x90"))

CODECS = (
    # RFC 1952 2.3.1: ID1 ID2
    Codec("gzip", ".gz", (b"\x1f\x8b",), lambda fh: gzip.GzipFile(fileobj=fh), "gunzip FILE.gz"),
    # The .xz File Format 1.2.1, 2.1.1.1: Header Magic Bytes
    Codec("xz", ".xz", (b"\xfd7zXZ\x00",), lambda fh: lzma.LZMAFile(fh), "unxz FILE.xz"),
    Codec("bzip2", ".bz2", _BZIP2, lambda fh: bz2.BZ2File(fh), "bunzip2 FILE.bz2"),
    # PKWARE APPNOTE 6.3.10, 4.3.7: local file header signature 0x04034b50
    Codec("zip", ".zip", (b"PK\x03\x04",), _zip_member, "unzip FILE.zip"),
    # RFC 8878 3.1.1: Magic_Number 0xFD2FB528, little-endian
    Codec("zstd", ".zst", (b"\x28\xb5\x2f\xfd",), None, "unzstd FILE.zst"),
)
COMPRESSIONS = "gzip, xz, bzip2 or a zip of one file"  # the codecs read, as errors name them
# what a broken file raises: the codecs' and their containers' own errors (zip: a bad offset as ValueError, an
# unsupported method as NotImplementedError, encryption as RuntimeError)
_BROKEN = (OSError, EOFError, zlib.error, lzma.LZMAError, zipfile.BadZipFile, NotImplementedError, RuntimeError,
           ValueError)


def uncompressed_name(name: str) -> str:
    """A file's name without a compression's ending (``trace.jsonl.xz``: ``trace.jsonl``), to tell its format by."""
    return next((name[:-len(c.suffix)] for c in CODECS if name.lower().endswith(c.suffix)), name)


def codec_of(data: bytes) -> Codec | None:
    return next((c for c in CODECS if c.starts(data)), None)


def decompressed(data: bytes, codec: Codec, *, where: str, field: str, error: type[InferplanError],
                 max_bytes: int) -> bytes:
    """``data``'s content by ``codec``, at most ``max_bytes`` of it; a file it cannot read refused naming its codec."""
    if codec.open is None:
        raise error(f"{where}: a {codec.name}-compressed file, which inferplan does not read: decompress it first "
                    f"({codec.command})", field=field, allowed=f"the text uncompressed, or compressed with {COMPRESSIONS}")
    try:
        with codec.open(io.BytesIO(data)) as fh:
            content = fh.read(max_bytes + 1)
    except ArchiveMembers as exc:
        names = ", ".join(exc.names[:5]) + (f" and {len(exc.names) - 5:,} more" if len(exc.names) > 5 else "")
        said = f"holds {len(exc.names):,} files ({names})" if exc.names else "holds no file"
        raise error(f"{where}: a zip that {said}, where one result file or trace is read", field=field,
                    allowed="a zip of one file, or that file itself") from None
    except _BROKEN as exc:
        raise error(f"{where}: starts as {codec.name} but does not decompress ({exc})", field=field,
                    allowed=f"a whole {codec.name} file, or the text uncompressed") from None
    if len(content) > max_bytes:
        raise error(f"{where}: decompresses to more than {max_bytes:,} bytes", field=field,
                    allowed=f"at most {max_bytes:,} bytes of text once decompressed")
    return content
