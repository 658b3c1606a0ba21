"""perf's headline says when the engine's running cap is below the load: how many requests queue, the cap and what
sets it (a stated max_num_seqs, the release's own setting with its sources, the engine's default with its source),
and the engine flag that raises it; nothing where every request runs."""

import pytest
from typer.testing import CliRunner

from inferplan.inputs.deployment import Deployment
from inferplan.inputs.workload import Workload
from inferplan.performance.serving import estimate
from inferplan.shells.cli import app

V3_MTP = Deployment(model="deepseek-v3", system="hgx-b200", engine="sglang", data_parallel_size=8,
                    enable_expert_parallel=True, speculative_method="mtp", speculative_tokens=1, mtp_draft=True)
H100 = Deployment(model="llama-3.1-8b", gpu="h100", engine="vllm")


@pytest.mark.parametrize(("d", "concurrency", "said"), [
    (V3_MTP, 112, ("64 of the 112 requests queue", "at most 48 run at once, 6 on each of 8 ranks",
                   "sets --max-running-requests 48 itself with a speculative draft",
                   "mr-sglang-wheels-draft-running-requests", "--max-running-requests raises the cap")),
    (H100, 1200, ("176 of the 1,200 requests queue", "vLLM defaults --max-num-seqs to 1,024 (eng-vllm-arg-utils)")),
    (Deployment(model="qwen3-30b-a3b", gpu="h100", engine="mlx"), 64,
     ("32 of the 64 requests queue", "defaults --decode-concurrency to 32 (mr-mlx-lm-server-batch-generator)")),
    (H100.model_copy(update={"max_num_seqs": 64}), 600, ("536 of the 600 requests queue", "max_num_seqs 64 is stated")),
    (Deployment(model="qwen3-next-80b-a3b", gpu="h200", engine="sglang", quantization="fp8", max_num_seqs=600), 600,
     ("at most 66 run at once, as the model's state pool holds them (--max-mamba-cache-size)",
      "--max-mamba-cache-size raises the cap (max_mamba_cache_size)")),
])
def test_a_cap_below_the_load_is_a_headline_note(catalog, d, concurrency, said):
    w = Workload(input_len=200, output_len=100, concurrency=concurrency, speculative_tokens=d.speculative_tokens)
    e = estimate(d, w, catalog)
    assert e.queue_note and all(s in e.queue_note for s in said), e.queue_note


def test_no_note_where_every_request_runs(catalog):
    assert estimate(H100, Workload(input_len=200, output_len=100, concurrency=64), catalog).queue_note is None


def test_perf_prints_the_note_without_explain():
    done = CliRunner().invoke(app, ["perf", "--model", "llama-3.1-8b", "--gpu", "h100", "--concurrency", "600",
                                    "--max-num-seqs", "64", "--input-len", "200", "--output-len", "100"],
                              prog_name="inferplan", env={"COLUMNS": "200"})
    assert done.exit_code == 0 and "note: 536 of the 600 requests queue" in done.stdout
