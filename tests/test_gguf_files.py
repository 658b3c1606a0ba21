"""A GGUF checkpoint's launch fetches a file the repo holds: llama.cpp's ``--hf-repo REPO:TAG`` takes the
first .gguf file whose name holds TAG followed by '.' or '-' (case-insensitive; common/download.cpp
find_best_model), so the tag is the label the file names carry, stored per checkpoint as data."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from inferplan.catalog.loader import load_catalog
from inferplan.deploy import launch_command
from inferplan.inputs.deployment import Deployment

GGUF_BUILDS = [(m.id, c) for m in load_catalog().models for c in m.checkpoints
               if c.repo and c.quantization.startswith("gguf-")]


def _picks(tag: str | None, file: str) -> bool:
    """Whether llama.cpp's tag rule picks ``file`` for ``tag`` (no tag: the repo's first model file)."""
    return tag is None or re.search(re.escape(tag) + "[.-]", file, re.IGNORECASE) is not None


@pytest.mark.parametrize("model, build", GGUF_BUILDS, ids=[f"{m}-{c.quantization}" for m, c in GGUF_BUILDS])
def test_every_published_gguf_build_states_the_file_its_tag_picks(model, build):
    assert build.gguf_file is not None, f"{model} {build.name}: state gguf_file (tag, file, kind, source)"
    assert _picks(build.gguf_file.tag, build.gguf_file.file), build.gguf_file
    assert build.gguf_file.file.endswith(".gguf")


def test_the_rule_tells_a_type_name_the_file_lacks():
    assert not _picks("MXFP4_MOE", "gpt-oss-120b-mxfp4-00001-of-00003.gguf")
    assert _picks("Q4_K_M", "Meta-Llama-3-8B-Instruct.Q4_K_M.gguf")


@pytest.mark.parametrize("model", ["gpt-oss-120b", "gpt-oss-20b"])
def test_gpt_oss_on_llamacpp_fetches_the_mxfp4_files_ggml_org_publishes(catalog, model):
    argv = launch_command(Deployment(model=model, gpu="rtx-5090", engine="llamacpp", max_model_len=32768,
                                     n_cpu_moe=30), catalog).argv
    repo_tag = argv[argv.index("--hf-repo") + 1]
    assert repo_tag == f"ggml-org/{model}-GGUF:mxfp4"


def test_a_build_split_into_byte_parts_is_served_from_the_joined_file(catalog):
    cmd = launch_command(Deployment(model="llama-3.1-70b", gpu="h100", gpus=2, engine="llamacpp", quantization="q8_0"),
                         catalog)
    assert "--hf-repo" not in cmd.argv and "<Meta-Llama-3.1-70B-Instruct.Q8_0.gguf>" in cmd.argv
    assert any("2 byte parts (.part1of2 … .part2of2)" in n and "cat" in n for n in cmd.notes)


def test_a_build_in_five_byte_parts_names_five(catalog):
    # mradermacher's DeepSeek-V3 Q2_K is five parts, .part1of5 … .part5of5
    cmd = launch_command(Deployment(model="deepseek-v3", gpu="h200", gpus=8, engine="llamacpp", quantization="q2_k"),
                         catalog)
    assert any("5 byte parts (.part1of5 … .part5of5)" in n for n in cmd.notes)


def test_offload_doc_says_which_published_builds_deploy_fetches_with_hf_repo():
    # the table of published MoE GGUF builds lists DeepSeek-V3's Q2_K, which --hf-repo does not load
    text = " ".join((Path(__file__).parents[1] / "docs" / "offload.md").read_text().split())
    claim = text[text.index("`deploy` fetches each as"):]
    claim = claim[:claim.index(". ")]
    assert "byte parts" in claim and "join" in claim
