"""Mechanisms behind the field records the memory model once over-predicted by far, each pinned on the
figure the engine printed: unwire the data that states the mechanism and its test fails."""

import pytest

from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import fit
from inferplan.units import GiB
from inferplan.validation.memory import check_point


def _check(catalog, point_id):
    return check_point(catalog.memory_points.records[point_id], catalog)


def test_metas_fp8_405b_keeps_attention_and_the_edge_blocks_in_bf16(catalog):
    """Meta's FP8 recipe quantizes the feed-forward layers of blocks 1-124 only; vLLM 0.5.3.post1 printed
    'Loading model weights took 57.7520 GB' per GPU at TP 8 (all linear layers at FP8 would be ~47.7,
    attention alone kept ~56.1)."""
    card = catalog.models.records["llama-3.1-405b"]
    fp8 = next(c for c in card.checkpoints if c.quantization == "fbgemm-fp8")
    assert fp8.keeps_unquantized is not None and "attention" in fp8.keeps_unquantized.groups
    assert fp8.keeps_unquantized.layers == {"mlp": 2}
    d = Deployment(model="llama-3.1-405b", gpu="h100", tensor_parallel_size=8, quantization="fbgemm-fp8",
                   max_model_len=8192)
    assert fit(d, catalog).weights_bytes_per_gpu / GiB == pytest.approx(57.752, rel=0.02)


def test_the_plain_fp8_format_still_quantizes_every_linear_layer(catalog):
    """NVIDIA's FP8 builds (TensorRT-LLM) quantize attention too: fp8 stays all-linear."""
    d = Deployment(model="llama-3.1-405b", gpu="h100", tensor_parallel_size=8, quantization="fp8", max_model_len=8192)
    assert fit(d, catalog).weights_bytes_per_gpu / GiB == pytest.approx(47.7, rel=0.02)


@pytest.mark.parametrize("layers", [{"mlp": 0}, {"attention": 3}])
def test_a_group_kept_in_some_layers_is_counted_and_not_also_whole(layers):
    from pydantic import ValidationError

    from inferplan.catalog.keep_schema import KeepsUnquantized

    with pytest.raises(ValidationError):
        KeepsUnquantized(groups=("attention",), layers=layers, source="s")


def test_trtllm_activation_follows_the_engines_max_num_tokens(catalog):
    """TensorRT-LLM 0.5 on an A10: without --max_num_tokens the engine's activations are sized for
    max_batch_size x max_input_len = 51,200 tokens, which leaves 10,718 tokens of KV cache."""
    point = catalog.memory_points.records["d02-llama2-7b-a10-trtllm"]
    assert point.settings.max_num_batched_tokens == 25 * 2048
    assert abs(_check(catalog, point.id).kv_error) < 0.15
