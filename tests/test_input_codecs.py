"""Compressed files told by their first bytes (``input_codecs``): gzip, xz, bzip2 and a zip of one file read
under the same cap on what they decompress to; zstd and a zip of several files refused naming what to do; a
compressed file's bytes sent base64-encoded over the API read as the file."""

from __future__ import annotations

import base64
import bz2
import gzip
import io
import lzma
import struct
import zipfile
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from inferplan.errors import InvalidScenarioError
from inferplan.input_files import text_of
from inferplan.measurements.formats import guess_format
from inferplan.measurements.records import RunProvenance, read_runs
from inferplan.search.trace import TraceFile, as_trace_file, is_jsonl, trace_of
from inferplan.shells.api import create_app

DATA = Path(__file__).parent / "data" / "measurements"
TEXT = "arrival_s,input_tokens,output_tokens\n0,10,5\n1.5,12,6\n"
H100_VLLM = RunProvenance(model="llama-3.1-8b", gpu="h100", engine="vllm", engine_version="0.11.0", measured_by="lab")


def _zip(*members: tuple[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members:
            archive.writestr(name, data)
    return out.getvalue()


def _read(data: bytes, max_bytes: int = 10_000) -> str:
    return text_of(data, where="t.csv", field="trace", error=InvalidScenarioError, max_bytes=max_bytes)


COMPRESS = {"gzip": gzip.compress, "xz": lzma.compress, "bzip2": bz2.compress,
            "zip": lambda data: _zip(("t.csv", data))}


@pytest.mark.parametrize("codec", COMPRESS)
def test_each_compression_is_read_by_its_bytes(codec):
    assert _read(COMPRESS[codec](TEXT.encode())) == TEXT


@pytest.mark.parametrize("codec", COMPRESS)
def test_each_compression_is_read_under_the_cap(codec):
    with pytest.raises(InvalidScenarioError, match="decompresses to more than 1,000 bytes"):
        _read(COMPRESS[codec](b"0" * 1_000_000), max_bytes=1_000)


@pytest.mark.parametrize("codec", ["xz", "bzip2", "zip"])
def test_a_cut_file_is_refused_naming_its_compression(codec):
    data = COMPRESS[codec](TEXT.encode() * 50)
    with pytest.raises(InvalidScenarioError, match=f"starts as {codec} but does not decompress") as info:
        _read(data[: len(data) // 2])
    assert info.value.field == "trace"


def test_a_zip_whose_directory_points_before_the_file_is_refused():
    data = bytearray(_zip(("t.csv", TEXT.encode())))
    end = data.index(b"PK\x05\x06")  # APPNOTE 4.3.16: the central directory's offset at byte 16 of its end record
    struct.pack_into("<I", data, end + 16, struct.unpack_from("<I", data, end + 16)[0] + 1000)
    with pytest.raises(InvalidScenarioError, match="starts as zip but does not decompress"):
        _read(bytes(data))


def test_a_zip_of_several_files_is_refused_naming_them():
    with pytest.raises(InvalidScenarioError, match=r"a zip that holds 2 files \(a.csv, b.csv\)"):
        _read(_zip(("a.csv", b"x"), ("b.csv", b"y")))


def test_zstd_is_refused_saying_how_to_decompress_it():
    zstd_frame = b"\x28\xb5\x2f\xfd\x20\x05\x29\x00\x00hello"  # RFC 8878 frame header, a raw block
    with pytest.raises(InvalidScenarioError, match=r"zstd-compressed file.*\(unzstd FILE.zst\)"):
        _read(zstd_frame)


@pytest.mark.parametrize("codec", ["xz", "zip", "zstd"])
def test_compressed_bytes_sent_as_text_are_named(codec):
    data = b"\x28\xb5\x2f\xfd\x00" if codec == "zstd" else COMPRESS[codec](TEXT.encode())
    sent = data.decode("utf-8", errors="replace")  # as a browser's file.text() reads it
    with pytest.raises(InvalidScenarioError, match=f"{codec}-compressed file's bytes sent as text"):
        trace_of(TraceFile(name="t.csv", text=sent))


def test_a_text_starting_with_bzip2s_letters_is_text():
    assert _read(b"BZh,input_tokens\n") == "BZh,input_tokens\n"


def test_a_names_compression_ending_is_passed_over_to_tell_the_format():
    assert is_jsonl("t.jsonl.xz") and is_jsonl("t.json.zip") and not is_jsonl("t.csv.bz2")
    assert guess_format("r.jsonl.bz2", "{}") == "sglang"


def test_an_xz_result_file_imports_as_the_file_itself(catalog):
    plain = (DATA / "vllm_bench_serve_c8.json").read_bytes()
    (run,) = read_runs(catalog, [("c8.json.xz", lzma.compress(plain))], H100_VLLM)
    (same,) = read_runs(catalog, [("c8.json", plain)], H100_VLLM)
    assert run.format == "vllm" and run.points == same.points


def test_a_base64_trace_file_is_decompressed():
    sent = TraceFile(name="t.csv.gz", text=base64.b64encode(gzip.compress(TEXT.encode())).decode(), encoding="base64")
    assert trace_of(sent).input_tokens == (10, 12)
    with pytest.raises(InvalidScenarioError, match="trace t.csv: not base64") as info:
        trace_of(TraceFile(name="t.csv", text="not base64!", encoding="base64"))
    assert info.value.field == "trace.text"


def test_base64_ending_in_a_newline_is_read_as_base64_file_writes_it():
    one_line = base64.b64encode(gzip.compress(TEXT.encode())).decode() + "\n"  # base64 -w0 FILE > f, or echo
    assert trace_of(TraceFile(name="t.csv.gz", text=f"  {one_line}", encoding="base64")).input_tokens == (10, 12)


def test_a_trace_sent_as_text_with_a_byte_order_mark_reads_as_the_file_does():
    sent = TraceFile(name="t.csv", text="\ufeff" + TEXT)
    assert trace_of(sent) == trace_of(TraceFile(name="t.csv", text=TEXT))


def test_wrapped_base64_is_refused_saying_to_send_it_on_one_line():
    wrapped = base64.encodebytes(gzip.compress(TEXT.encode() * 20)).decode()  # 76-character lines, as base64 FILE writes
    assert "\n" in wrapped.strip()
    with pytest.raises(InvalidScenarioError, match="wrapped over several lines") as info:
        trace_of(TraceFile(name="t.csv.gz", text=wrapped, encoding="base64"))
    assert "base64 on one line (base64 -w0 FILE" in info.value.allowed


def test_a_bad_trace_file_key_and_the_simulate_schema_name_the_encoding(client):
    with pytest.raises(InvalidScenarioError) as info:
        as_trace_file({"name": "t.csv", "text": TEXT, "encodng": "base64"})
    assert info.value.field == "trace.encodng" and "{name, text, encoding}" in info.value.allowed
    schema = client.get("/openapi.json").json()["components"]["schemas"]["SimulateRequest"]["properties"]["trace"]
    assert "{name, text, encoding}" in schema["description"]


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    return TestClient(create_app(tmp_path_factory.mktemp("db") / "t.db"))


def test_an_api_upload_of_a_compressed_file_in_base64_is_imported(client):
    data = bz2.compress((DATA / "vllm_bench_serve_c8.json").read_bytes())
    body = {"files": [{"name": "c8.json.bz2", "content": base64.b64encode(data).decode(), "encoding": "base64"}],
            "provenance": {"model": "llama-3.1-8b", "gpu": "h100"}}
    r = client.post("/api/measurements", json=body)
    assert r.status_code == 201, r.text
    assert r.json()[0]["points"][0]["concurrency"] == 8
    body["files"][0]["content"] = "%%%"
    r = client.post("/api/measurements", json=body)
    assert r.status_code == 422 and r.json()["error"]["field"] == "files.0.content"
    assert "not base64" in r.json()["error"]["message"]
