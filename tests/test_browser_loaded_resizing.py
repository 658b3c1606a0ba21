"""A loaded pick's replica cells were counted for its target users: another target is sized afresh; and the
What runs on my GPUs? box takes no host RAM for a unified-memory chip, whose memory is its host RAM."""

import json
import urllib.parse

import pytest

import test_browser
from test_browser import planned, scenario_in_url

server, browser, page = test_browser.server, test_browser.browser, test_browser.page

pytestmark = pytest.mark.slow

PICK = {"name": "a pick", "model": "qwen3-32b", "engine": "vllm", "quantization": "fp8",
        "platform": {"system": "hgx-h100"}, "cell": {"tensor_parallel_size": 1},
        "workload": {"preset": "chat-seat"}, "target_users": 100, "replicas": 2}


def test_a_loaded_picks_replicas_give_way_to_a_new_target(page, server):
    page.goto(server + "/?s=" + urllib.parse.quote(json.dumps(PICK)))
    stamp = planned(page)
    assert scenario_in_url(page)["replicas"] == 2
    page.fill("#target_users", "5000")
    planned(page, stamp)
    sent = scenario_in_url(page)
    assert "replicas" not in sent and sent["target_users"] == 5000 and sent["cell"] == PICK["cell"]


def test_the_host_ram_control_is_off_for_a_unified_memory_chip(page, server):
    page.goto(server + "/")
    planned(page)
    assert page.locator("#homelab-host-memory").is_enabled()
    page.fill("#homelab-host-memory", "64")
    page.select_option("#homelab-gpu", "apple-m4-max")
    assert page.locator("#homelab-host-memory").is_disabled() and page.input_value("#homelab-host-memory") == ""
    page.select_option("#homelab-gpu", "rtx-4090")
    assert page.locator("#homelab-host-memory").is_enabled()
