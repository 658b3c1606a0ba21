"""An engine with no multi-host launch inferplan writes (no ``multi_host`` entry: TensorRT-LLM) is searched
only with instances one host holds, as ``deploy`` starts it on one host; engines with one keep wider cells."""

from __future__ import annotations

from inferplan.catalog.flags_schema import flags_for
from inferplan.deploy.nodes import host_split
from inferplan.search.evaluate import cell_deployment
from inferplan.search.load import resolve_load
from inferplan.search.request import SearchRequest
from inferplan.search.space import build_space


def _cells(catalog, engine: str):
    req = SearchRequest(models=("qwen3-8b",), systems=("gb200-nvl72",), engines=(engine,), quantizations=("bf16",),
                        kv_cache_dtypes=("auto",), speculative=False, request_rate_per_s=1.0, input_len=2000,
                        output_len=500)
    rl = resolve_load(catalog, req)
    return build_space(catalog, req, input_len=rl.input_len, output_len=rl.output_len).cells, rl


def test_trtllm_cells_fit_one_gb200_compute_tray(catalog):
    """A GB200 NVL72's OS host is a 4-GPU compute tray: TensorRT-LLM's cells stop at 4 GPUs, vLLM's reach 8."""
    assert not flags_for(catalog, "trtllm").multi_host and flags_for(catalog, "vllm").multi_host
    cells, rl = _cells(catalog, "trtllm")
    assert cells and all(c.gpus <= 4 and host_split(cell_deployment(c, rl), catalog) is None for c in cells)
    wide, _ = _cells(catalog, "vllm")
    assert any(c.gpus > 4 for c in wide)
