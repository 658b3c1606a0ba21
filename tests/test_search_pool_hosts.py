"""inferplan writes a disaggregated pick's pool workers for one host each (``deploy.nodes.pool_spans_note``), so the
search tries separate pools only with cells whose instance one host holds."""

from __future__ import annotations

from inferplan.deploy.nodes import host_split
from inferplan.search.evaluate import cell_deployment, model_cell
from inferplan.search.load import resolve_load
from inferplan.search.pricing import unit_costs
from inferplan.search.request import SearchRequest
from inferplan.search.space import build_space


def test_no_pool_runs_a_cell_wider_than_one_host(catalog):
    """On a GB200 NVL72 one OS host is a 4-GPU compute tray: TP8 cells of Qwen3-8B run aggregated (their
    launch spans trays), and only cells of at most 4 GPUs run as a prefill or decode pool."""
    req = SearchRequest(models=("qwen3-8b",), systems=("gb200-nvl72",), engines=("vllm",), quantizations=("bf16",),
                        kv_cache_dtypes=("auto",), speculative=False, request_rate_per_s=1.0, input_len=2000,
                        output_len=500)
    rl = resolve_load(catalog, req)
    cells = build_space(catalog, req, input_len=rl.input_len, output_len=rl.output_len).cells
    costs = unit_costs(catalog, cells[0].platform, "qwen3-8b")
    pools = {c.gpus: model_cell(catalog, c, rl, costs, disaggregate=True).disaggregates for c in cells}
    assert any(g > 4 for g in pools) and any(g <= 4 for g in pools), pools
    assert pools == {g: g <= 4 for g in pools}
    assert all((host_split(cell_deployment(c, rl), catalog) is None) == (c.gpus <= 4) for c in cells)
