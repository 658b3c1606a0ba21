"""The web page's run upload takes what the API does: the engine settings, the host RAM (offload, a host KV tier)
and speculative decoding the run was launched with, the choices the API lists (``/api/measurements/choices``);
the stored run's line names them, and a setting its engine cannot take is refused marking its control."""

from pathlib import Path

import httpx
import pytest

import test_browser
from test_browser_polish import DETACHED_LABELS

server, browser, page = test_browser.server, test_browser.browser, test_browser.page
pytestmark = pytest.mark.slow
REPORT = Path(__file__).parent / "data" / "measurements" / "guidellm_report.json"
# control (its id after measurement-, the flag's name) -> the value stated
STATED = {"kv-cache-dtype": "fp8", "max-num-seqs": "64", "kv-offloading-size": "16", "kv-offloading-backend": "lmcache",
          "host-memory-gb": "64", "speculative-tokens": "3", "speculative-method": "draft_model",
          "draft-model": "meta-llama/Llama-3.2-1B-Instruct", "acceptance-rate": "0.6"}


def _form(page, server):
    page.goto(server + "/")
    page.wait_for_selector("#measurement-speculative-method option[value=draft_model]", state="attached", timeout=30000)
    page.click("#measurement-more summary")
    page.set_input_files("#measurement-file", str(REPORT))
    page.fill("#measurement-version", "0.11.0")
    page.select_option("#measurement-engine", "vllm")


def test_a_run_with_a_speculative_method_and_engine_settings_is_uploaded_and_shown(page, server):
    _form(page, server)
    assert page.evaluate(DETACHED_LABELS, "measurement-form") == []  # the opened fields' labels sit on their controls
    page.fill("#measurement-max-model-len", "8192")
    kv = page.eval_on_selector_all("#measurement-kv-cache-dtype option", "os => os.map(o => o.value)")
    assert "fp8" in kv and "q8_0" not in kv  # vLLM's KV cache dtypes, as the API lists them
    for control, value in STATED.items():  # a select is chosen, an input typed into
        if page.evaluate(f"document.getElementById('measurement-{control}').tagName") == "SELECT":
            page.select_option(f"#measurement-{control}", value)
        else:
            page.fill(f"#measurement-{control}", value)
    page.click("#measurement-form button[type=submit]")
    page.wait_for_selector("#measurement-list li >> text=guidellm_report.json", timeout=30000)
    row = " ".join(page.text_content("#measurement-list li").split())
    for control, value in STATED.items():
        assert f"--{control} {value}" in row, (control, row)
    (run,) = httpx.get(server + "/api/measurements").json()
    assert run["max_model_len"] == 8192


def test_a_setting_the_engine_cannot_take_is_refused_marking_its_control(page, server):
    _form(page, server)
    page.fill("#measurement-ubatch-size", "128")
    page.click("#measurement-form button[type=submit]")
    page.wait_for_selector("#measurement-error >> text=refused", timeout=30000)
    assert "Micro-batch (llama.cpp)" in page.text_content("#measurement-error")
    assert page.get_attribute("#measurement-ubatch-size", "aria-invalid") == "true"
    page.problems[:] = [p for p in page.problems if "422 (Unprocessable Entity)" not in p]
