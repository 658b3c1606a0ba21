"""The page's GPU lists (the "What runs on my GPUs?" box and the simulator's platform control) run
the way a buyer scans them — by vendor, then class, then memory — and its model lists by family, then
size (catalog/list_order.py), not in the catalogue files' order; driven in headless Chromium."""

import pytest

from inferplan.catalog.list_order import buyer_order, model_order
from inferplan.catalog.loader import load_catalog

import test_browser
from test_browser import planned

# the browser test module's fixtures, shared
server, browser, page = test_browser.server, test_browser.browser, test_browser.page

pytestmark = pytest.mark.slow


def test_the_gpu_lists_run_by_vendor_class_and_memory(page, server):
    page.goto(server + "/")
    planned(page)
    wanted = [a.id for a in buyer_order(load_catalog().accelerators)]
    homelab = page.eval_on_selector_all("#homelab-gpu option", "os => os.map(o => o.value)")
    assert homelab == wanted
    assert page.eval_on_selector("#homelab-gpu", "s => s.value") == "rtx-4090"
    platforms = page.eval_on_selector_all("#system option", "os => os.map(o => o.value)")
    assert [p.removeprefix("gpu:") for p in platforms if p.startswith("gpu:")] == wanted
    # a home card is met before a data-centre part of its vendor
    assert homelab.index("rtx-3090") < homelab.index("rtx-4090") < homelab.index("rtx-5090") < homelab.index("h100-sxm")



def test_the_model_lists_run_by_family_then_size(page, server):
    page.goto(server + "/")
    planned(page)
    ordered = [m.id for m in model_order(load_catalog().models)]
    shown = page.eval_on_selector_all("#model option", "os => os.map(o => o.value)")
    assert shown == [m for m in ordered if m in shown] and len(shown) > 40
    assert page.eval_on_selector("#model", "s => s.value") == "qwen3-235b-a22b"
    assert page.eval_on_selector_all("#search-model option", "os => os.map(o => o.value)") == shown
