"""The page sends a chosen file's text, and a compressed one's bytes (base64), so a compressed result file or
trace is decompressed by the server (``input_files.text_of``) as the CLI reads it, while a plain file's body
stays within the API's size limits and a UTF-8 BOM is dropped."""

import bz2
import gzip
import lzma
from pathlib import Path

import httpx
import pytest

import test_browser
from test_browser import planned
from test_browser_search import searched

server, browser, page = test_browser.server, test_browser.browser, test_browser.page
pytestmark = pytest.mark.slow
VLLM = Path(__file__).parent / "data" / "measurements" / "vllm_bench_serve_c8.json"


def test_a_gzip_result_file_is_uploaded_from_the_page(page, server):
    page.goto(server + "/")
    page.wait_for_selector("#measurement-speculative-method option[value=draft_model]", state="attached", timeout=30000)
    page.set_input_files("#measurement-file", files=[{"name": "c8.json.gz", "mimeType": "application/gzip",
                                                      "buffer": gzip.compress(VLLM.read_bytes())}])
    page.click("#measurement-form button[type=submit]")
    page.wait_for_selector("#measurement-list li >> text=c8.json.gz", timeout=30000)
    assert page.locator("#measurement-error").is_hidden(), page.text_content("#measurement-error")
    (run,) = httpx.get(server + "/api/measurements").json()
    assert run["points"][0]["concurrency"] == 8


@pytest.mark.parametrize("name, compress", [("t.csv.xz", lzma.compress), ("t.csv.bz2", bz2.compress)])
def test_a_compressed_trace_drives_the_search(page, server, name, compress):
    lines = ["arrival_s,input_tokens,output_tokens", *(f"{0.25 * i},1500,300" for i in range(40))]
    page.goto(server + "/")
    planned(page)
    page.select_option("#search-model", "qwen3-8b")
    page.fill("#search-top", "3")
    page.set_input_files("#search-trace", files=[{"name": name, "mimeType": "application/octet-stream",
                                                  "buffer": compress("\n".join(lines).encode())}])
    page.click("#search-run")
    searched(page)
    assert page.locator("#search-error").is_hidden(), page.text_content("#search-error")
    assert f"trace {name}" in page.text_content("#search-summary")


@pytest.mark.parametrize("name, data", [
    # ~55 KB of plain CSV: as text it fits /api/search's 64 KiB body, base64-encoded (~74 KB) it would not
    ("big.csv", ("arrival_s,input_tokens,output_tokens\n" + "".join(f"{0.05 * i:.3f},1500,300\n" for i in range(3300))).encode()),
    # Excel's "CSV UTF-8": a byte-order mark before the header
    ("excel.csv", b"\xef\xbb\xbfarrival_s,input_tokens,output_tokens\n" + b"".join(b"%d,1500,300\n" % i for i in range(40))),
], ids=["55kB", "bom"])
def test_a_plain_trace_drives_the_search_as_its_text(page, server, name, data):
    page.goto(server + "/")
    planned(page)
    page.select_option("#search-model", "qwen3-8b")
    page.fill("#search-top", "3")
    page.set_input_files("#search-trace", files=[{"name": name, "mimeType": "text/csv", "buffer": data}])
    page.click("#search-run")
    searched(page)
    assert page.locator("#search-error").is_hidden(), page.text_content("#search-error")
    assert f"trace {name}" in page.text_content("#search-summary")
