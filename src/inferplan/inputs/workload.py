"""The serving workload a speed question is asked about."""

from typing import ClassVar, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

from inferplan.inputs import Input
from inferplan.inputs.deployment import MAX_CONTEXT_TOKENS

# per draft token where no rate is stated and the draft publishes none (an EAGLE-3 head without a
# published acceptance length, a model's MTP layers): assumed, and every answer priced at it says so
# (performance.drafts.resolve_acceptance)
DEFAULT_ACCEPTANCE_RATE = 0.7


class Workload(Input):
    # True on the shape a decode pool's instance runs (``DecodePoolWorkload``): its prompt tokens count as
    # cached because the prefill pool hands their KV cache over, not because the workload hits a prefix cache
    prompt_from_prefill_pool: ClassVar[bool] = False

    input_len: int = Field(1024, ge=1, le=MAX_CONTEXT_TOKENS, description="prompt tokens per request")
    output_len: int = Field(256, ge=1, le=MAX_CONTEXT_TOKENS, description="generated tokens per request")
    concurrency: int | Literal["max"] = Field(1, description="requests in flight across the deployment, or 'max' (what memory allows)")
    speculative_tokens: int = Field(0, ge=0, le=32, description="draft tokens proposed per step")
    acceptance_rate: float | None = Field(None, ge=0, le=1, description=(
        "probability each draft token is accepted; left out: a catalogued EAGLE-3 draft's published rate, else "
        f"{DEFAULT_ACCEPTANCE_RATE} (assumed); none with ngram drafts: state it"))
    prefix_cache_hit_rate: float = Field(0.0, ge=0, le=1, description="share of input tokens served from the prefix cache")
    prefix_cache_host_share: float = Field(
        0.0, ge=0, le=1, description="of those cached tokens, the share found in the host-RAM KV tier (loaded over PCIe)")
    backend: str | None = Field(
        None, max_length=40, pattern=r"^[a-z0-9][a-z0-9_.-]*$",
        description="an engine's back end id, e.g. llama.cpp's vulkan (engines.yaml backends; default: the first that runs "
                    "on the accelerator's software stack)")

    @field_validator("output_len")
    @classmethod
    def _request_fits_a_context(cls, value: int, info: ValidationInfo) -> int:
        if value + info.data.get("input_len", 0) > MAX_CONTEXT_TOKENS:
            raise ValueError(f"input_len + output_len must be at most {MAX_CONTEXT_TOKENS:,} tokens (one request's context)")
        return value

    @field_validator("acceptance_rate")
    @classmethod
    def _only_with_drafts(cls, value: float | None, info: ValidationInfo) -> float | None:
        if value is not None and not info.data.get("speculative_tokens"):
            raise PydanticCustomError("acceptance_without_drafts",
                                      "an acceptance rate applies only with speculative decoding (draft tokens per step)",
                                      {"allowed": "no acceptance rate, or 1 or more draft tokens per step beside it"})
        return value

    @field_validator("prefix_cache_host_share")
    @classmethod
    def _only_with_hits(cls, value: float, info: ValidationInfo) -> float:
        if value and not info.data.get("prefix_cache_hit_rate"):  # a share of no cached tokens would change nothing
            raise PydanticCustomError("host_share_without_hits",
                                      "a host share of cached tokens applies only with a prefix-cache hit rate above 0",
                                      {"allowed": "0, or a prefix-cache hit rate above 0 beside it"})
        return value

    @field_validator("concurrency", mode="before")
    @classmethod
    def _a_number_or_max(cls, value: object) -> object:
        # the union with "max" would read a quoted "32" as 32; elsewhere a quoted number is refused
        if isinstance(value, str) and value != "max":
            raise ValueError("a whole number (unquoted) or 'max'")
        if isinstance(value, bool):
            raise ValueError("a whole number or 'max', not true/false")
        return value

    @field_validator("concurrency")
    @classmethod
    def _concurrency_in_range(cls, value: int | str) -> int | str:
        if isinstance(value, int) and not 1 <= value <= 10_000_000:
            raise PydanticCustomError("concurrency_range", "concurrency must be between 1 and 10,000,000, or 'max'",
                                      {"allowed": "1 to 10,000,000, or max"})
        return value


class DecodePoolWorkload(Workload):
    """The request shape one instance of a decode pool runs (vLLM's and SGLang's disaggregated prefill,
    TRT-LLM's generation servers): each prompt arrives as KV cache from the prefill pool, so no prompt token
    rides its steps, priced as every prompt token cached. An estimate under it says no "prefix cache": the
    cached prompt is the pool's handover, not a hit rate the workload states."""

    prompt_from_prefill_pool: ClassVar[bool] = True

    @model_validator(mode="after")
    def _whole_prompt_handed_over(self) -> "DecodePoolWorkload":
        if self.prefix_cache_hit_rate != 1.0:  # left out, the field's 0.0 would be no handover at all
            raise PydanticCustomError("decode_pool_prompt", "a decode pool's instance has every prompt token "
                                      "handed over as KV cache (prefix_cache_hit_rate 1.0)", {"allowed": "1.0"})
        return self
