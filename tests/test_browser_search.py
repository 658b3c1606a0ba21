"""The web page's "Find the cheapest" view, driven in headless Chromium: a search from the form,
the ranked table with launch commands, the cost/interactivity chart, and "Use this" loading a pick
into the Users + ROI simulator."""

import pytest

import test_browser
from test_browser import planned, scenario_in_url

from inferplan.report.search_view import duration

server, browser, page = test_browser.server, test_browser.browser, test_browser.page
pytestmark = pytest.mark.slow


def searched(pg, previous=None):
    pg.wait_for_function("([prev]) => document.body.dataset.searched && document.body.dataset.searched !== prev",
                         arg=[previous], timeout=180000)
    return pg.evaluate("document.body.dataset.searched")


def small_h100_search(pg, server, users):
    """The page opened and a small search set up: Qwen3-8B for ``users`` users on H100 SXM with vLLM, the best 3."""
    pg.goto(server + "/")
    planned(pg)
    pg.select_option("#search-model", "qwen3-8b")
    pg.fill("#search-users", str(users))
    pg.fill("#search-top", "3")
    pg.select_option("#search-accelerators", ["h100-sxm"])
    pg.select_option("#search-engines", ["vllm"])


def refusals_only(pg):
    """The page's only console problems are the server's refusals (status 422) the test asked for; cleared."""
    assert all("status of 422" in p for p in pg.problems), pg.problems
    pg.problems.clear()


def test_find_the_cheapest_and_use_the_pick(page, server):
    page.goto(server + "/")
    stamp = planned(page)
    page.select_option("#search-model", "qwen3-32b")
    page.fill("#search-users", "200")
    page.select_option("#search-preset", "chat-seat")
    page.fill("#search-ttft-p95", "2")
    page.fill("#search-top", "5")
    page.select_option("#search-pricing", "buy")  # a bought pick plans in the simulator at its price band
    page.click("#search-run")
    searched(page)
    assert page.locator("#search-error").is_hidden(), page.text_content("#search-error")
    rows = page.locator("#search-table tbody tr")
    assert 1 <= rows.count() <= 5
    view = page.evaluate("window.inferplan.lastSearch")
    first = view["rows"][0]
    assert first["deploy"] in rows.first.text_content()  # the launch command is shown
    assert "TTFT" in rows.first.text_content() and "/Mtok" in rows.first.text_content()
    # the row's figures are the JSON's simulated ones, named so, the end-to-end p95 among them
    got = view["result"]["results"][0]
    how = "simulated" if got["simulated_ttft_p95_s"] is not None else "approximated"
    figure = lambda key: got[f"simulated_{key}"] if how == "simulated" else got[key]  # noqa: E731
    assert f" / {duration(figure('ttft_p95_s'))} / " in rows.first.text_content()
    assert f"end-to-end p95 {duration(figure('e2e_p95_s'))} ({how})" in rows.first.text_content()
    # each pick's notes, as `inferplan search` prints them: a bought pick rests on the price band's middle
    assert first["notes"] == view["result"]["results"][0]["notes"]
    capex = next(n for n in first["notes"] if n.startswith("capex: mid of the catalogue price band"))
    notes = rows.first.locator("details.pick-notes")
    assert (notes.get_attribute("open") is None) == (len(first["notes"]) > 2)  # folded when there are many
    if notes.get_attribute("open") is None:
        notes.locator("summary").click()
    assert notes.locator("li", has_text=capex).is_visible()
    assert page.locator("#chart-search svg").count() == 1
    assert "at an API" in page.text_content("#search-api")
    page.click("button[aria-label='Use deployment 1']")
    planned(page, stamp)
    sent = scenario_in_url(page)
    pick = first["scenario"]
    assert (sent["model"], sent["engine"], sent["quantization"]) == (pick["model"], pick["engine"], pick["quantization"])
    assert {k: sent["platform"][k] for k in pick["platform"]} == pick["platform"]
    # the whole cell, its running cap included: the simulator launches the row's command
    assert sent["cell"] == pick["cell"] and pick["cell"]["max_num_seqs"] == got["max_num_seqs_per_rank"]
    assert " ".join(page.text_content("#launch-command").split()) == " ".join(first["deploy"].split())
    # the pick's replicas and load reach the simulator: its systems and capex, not a preset's sizing
    assert (sent["replicas"], sent["workload"], sent["target_users"]) == (pick["replicas"], pick["workload"], 200)
    cards = test_browser.card_values(page)
    assert cards["capex"] == f"${view['result']['results'][0]['capex_usd']:,.0f}"


def test_a_disaggregated_pick_keeps_its_prefill_pool_in_the_simulator(page, server):
    """A disaggregated pick's scenario, loaded as "Use this" loads it (``fillForm``), plans with its prefill pool:
    both pools' systems in the capex, the pool named in the loadouts card."""
    import json
    import urllib.parse

    pick = {"name": "pools", "model": "qwen3-8b", "engine": "vllm", "platform": {"system": "hgx-h100"},
            "cell": {"tensor_parallel_size": 4}, "replicas": 2,
            "prefill_pool": {"instances": 3, "cell": {"tensor_parallel_size": 2}},
            "workload": {"preset": "chat-seat"}, "target_users": 500}
    page.goto(server + "/?" + urllib.parse.urlencode({"s": json.dumps(pick), "c": "usd"}) + "#simulator")
    planned(page)
    sent = scenario_in_url(page)
    assert (sent["prefill_pool"], sent["replicas"], sent["cell"]) == (pick["prefill_pool"], 2, pick["cell"])
    capex = next(c["value"] for c in test_browser.api_view(server, pick)["cards"] if c["key"] == "capex")
    assert test_browser.card_values(page)["capex"] == capex == "$760,000"  # 2 HGX H100: a decode and a prefill system
    assert "prefill pool of 3 instances of 2 GPUs" in page.text_content("#cards")


def test_an_impossible_target_explains_every_family(page, server):
    page.goto(server + "/")
    planned(page)
    page.select_option("#search-model", "qwen3-32b")
    page.fill("#search-ttft-p95", "0.001")
    page.click("#search-run")
    searched(page)
    assert page.locator("#search-table tbody tr").count() == 0
    assert page.text_content("#search-status") == "nothing meets every target"
    assert page.locator("#search-infeasible li").count() > 3
    assert page.evaluate("document.getElementById('search-infeasible-box').open")


def test_a_trace_file_drives_the_search_and_a_bad_row_is_named(page, server):
    import json

    rows = [{"arrival_s": 0.25 * i, "input_tokens": 1500, "output_tokens": 300} for i in range(40)]
    page.goto(server + "/")
    planned(page)
    page.select_option("#search-model", "qwen3-8b")
    page.fill("#search-top", "3")
    text = "\n".join(json.dumps(r) for r in rows)
    page.set_input_files("#search-trace", files=[{"name": "t.jsonl", "mimeType": "application/jsonl",
                                                  "buffer": text.encode()}])
    page.click("#search-run")
    searched(page)
    assert page.locator("#search-error").is_hidden(), page.text_content("#search-error")
    assert "trace t.jsonl" in page.text_content("#search-summary")
    assert page.locator("#search-table tbody tr").count() >= 1
    bad = [dict(r) for r in rows]
    bad[2]["input_tokens"] = "many"
    page.set_input_files("#search-trace", files=[{"name": "t.jsonl", "mimeType": "application/jsonl",
                                                  "buffer": "\n".join(json.dumps(r) for r in bad).encode()}])
    page.click("#search-run")
    page.wait_for_function("() => !document.getElementById('search-error').hidden", timeout=60000)
    error = page.text_content("#search-error")
    assert "trace.2.input_tokens" in error and "row 3 (line 3)" in error  # rows count from 1, as the CLI names them
    assert all("status of 422" in p for p in page.problems), page.problems  # the refusal, and nothing else
    page.problems.clear()


def test_a_csv_trace_drives_the_search_as_the_cli_reads_it(page, server):
    """A CSV trace is read as `--trace t.csv` reads it: its header names the columns, a bad row is named
    with its line (the header is line 1)."""
    lines = ["arrival_s,input_tokens,output_tokens", *(f"{0.25 * i},1500,300" for i in range(40))]
    page.goto(server + "/")
    planned(page)
    page.select_option("#search-model", "qwen3-8b")
    page.fill("#search-top", "3")
    page.set_input_files("#search-trace", files=[{"name": "t.csv", "mimeType": "text/csv",
                                                  "buffer": "\n".join(lines).encode()}])
    page.click("#search-run")
    searched(page)
    assert page.locator("#search-error").is_hidden(), page.text_content("#search-error")
    assert "trace t.csv" in page.text_content("#search-summary")
    assert page.locator("#search-table tbody tr").count() >= 1
    lines[3] = "0.5,many,300"
    page.set_input_files("#search-trace", files=[{"name": "t.csv", "mimeType": "text/csv",
                                                  "buffer": "\n".join(lines).encode()}])
    page.click("#search-run")
    page.wait_for_function("() => !document.getElementById('search-error').hidden", timeout=60000)
    error = page.text_content("#search-error")
    assert "trace.2.input_tokens" in error and "row 3 (line 4)" in error and "'many' is not a number" in error
    assert all("status of 422" in p for p in page.problems), page.problems
    page.problems.clear()


def test_bursty_arrivals_and_spread_lengths_from_the_form(page, server):
    page.goto(server + "/")
    planned(page)
    page.select_option("#search-model", "qwen3-8b")
    page.select_option("#search-arrival", "bursty")
    for field, value in {"rate": "4", "input-len": "1500", "output-len": "300", "top": "3", "peak": "3",
                         "output-scv": "0.5"}.items():
        page.fill(f"#search-{field}", value)
    page.click("#search-run")
    stamp = searched(page)
    assert page.locator("#search-error").is_hidden(), page.text_content("#search-error")
    summary = page.text_content("#search-summary")
    assert "bursts at 3× the mean rate" in summary and "length spread SCV 0 / 0.5" in summary
    assert page.locator("#search-table tbody tr").count() >= 1
    page.select_option("#search-lengths", "uniform")  # evenly drawn lengths spread no wider than SCV 1/3
    page.click("#search-run")
    stamp = searched(page, stamp)
    assert "output_tokens_scv" in page.text_content("#search-error")
    refusals_only(page)
    page.fill("#search-output-scv", "0.3")
    page.click("#search-run")
    searched(page, stamp)
    assert page.locator("#search-error").is_hidden(), page.text_content("#search-error")
    assert "uniform length spread SCV 0 / 0.3" in page.text_content("#search-summary")
    page.fill("#search-peak", "0.5")  # below 1: the form itself holds it back
    assert page.evaluate("document.getElementById('search-peak').validity.rangeUnderflow")


def test_the_forms_filters_and_targets_reach_the_search(page, server, catalog):
    page.goto(server + "/")
    planned(page)
    engines = page.eval_on_selector_all("#search-engines option", "os => os.map(o => o.value)")
    assert engines == [e.id for e in catalog.engines]  # the choices come from the server
    assert page.eval_on_selector_all("#search-statuses option:checked", "os => os.map(o => o.value)") == ["shipping"]
    page.select_option("#search-model", "qwen3-8b")
    page.fill("#search-users", "200")
    page.select_option("#search-preset", "chat-seat")
    page.fill("#search-top", "3")
    page.select_option("#search-vendors", ["amd"])
    page.fill("#search-max-capex", "30000")
    page.fill("#search-ttft-p50", "1")
    page.fill("#search-e2e-p95", "120")
    with page.expect_request("**/api/views/search") as sent:
        page.click("#search-run")
    body = sent.value.post_data_json
    assert body["vendors"] == ["amd"] and body["max_capex_usd"] == 30000 and body["statuses"] == ["shipping"]
    assert body["targets"]["ttft_p50_s"] == 1 and body["targets"]["e2e_p95_s"] == 120
    assert "engines" not in body and "form_factors" not in body  # none chosen: every one
    searched(page)
    assert page.locator("#search-error").is_hidden(), page.text_content("#search-error")
    results = page.evaluate("window.inferplan.lastSearch")["result"]["results"]
    assert results
    for r in results:
        assert catalog.accelerators.records[r["accelerator"]].vendor.lower() == "amd"
        assert r["capex_usd"] <= 30000
    page.fill("#search-tpot-p95", "0.05")  # one speed target: tokens/s per user gives way
    assert page.evaluate("document.getElementById('search-speed').disabled")
