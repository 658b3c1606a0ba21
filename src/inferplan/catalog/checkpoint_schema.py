"""What a published checkpoint says about how engines load it, beside its quantization and size
(``schema.Checkpoint``): the tag llama.cpp picks its GGUF file by, and the engines that load it.

llama.cpp's ``--hf-repo REPO:TAG`` lists the repo's files and takes the first ``.gguf`` file whose name
holds TAG followed by ``.`` or ``-`` (case-insensitive); without a tag it tries Q4_K_M, then Q8_0, then the
first model file (``find_best_model`` in common/download.cpp,
https://github.com/ggml-org/llama.cpp/blob/0216dab364b886a4638020856333c07044453dd9/common/download.cpp,
checked 2026-12-05). So the tag is the quant label the repo's file names carry, which need not be the
llama-quantize file-type name (ggml-org's gpt-oss files say ``mxfp4``, not ``MXFP4_MOE``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from inferplan.catalog.provenance import Bits
from inferplan.inputs import Input


class GgufFile(Input):
    """The file of a GGUF checkpoint that llama.cpp's ``--hf-repo`` picks, and the tag that picks it."""

    model_config = ConfigDict(defer_build=True)

    tag: str | None  # the quant label in the file name; None: the repo is served without a tag
    file: str  # the (first) file's name as the repo lists it
    # listed: the file name as a cited listing or page shows it; assumed: the uploader's naming scheme with
    # the llama-quantize type name, not checked against the repo's listing
    kind: Literal["listed", "assumed"]
    # more than 1: the repo splits the file into that many plain byte parts (NAME.gguf.part1of2) that --hf-repo
    # does not load; the parts are joined with cat and the joined file served
    byte_parts: int = Field(default=1, ge=1)
    source: str
    note: str | None = None


class KeptCheckpointExperts(Input):
    """Routed experts that a model's checkpoint ships in ``quantization`` and that a format's builds
    keep as they are (llama.cpp's gpt-oss converter writes the MXFP4 experts as GGML MXFP4 whatever
    the output type, so the K-quant and Q8_0 files change only the other tensors)."""

    model_config = ConfigDict(defer_build=True)

    quantization: str  # the checkpoint's own format (quantizations.yaml id): its config.json quant_method
    model_types: tuple[str, ...] = Field(min_length=1)  # config.json model_type whose converter keeps them
    bits_per_weight: Bits  # the kept experts' bits, scales included
    source: str  # where the converter (or the builds) keep them
    note: str | None = None

