"""The acceptance a run's server measured, as its result file saves it (``serving_formats.measured_acceptance``:
vLLM's ``spec_decode_acceptance_length`` over the run, at the draft tokens per step its counts give; SGLang's
``accept_length``, at the run's stated draft tokens per step), and the rate per draft token it gives
(``memory.eagle3.rate_for_length``, the conversion a catalogued draft's published length takes). An import
predicts the run at that rate unless the user states one (``--acceptance-rate``)."""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field

from inferplan.errors import InvalidScenarioError
from inferplan.memory.eagle3 import rate_for_length

# the run field a file's draft tokens per step fill, or are checked against (an error on it names the file)
FILE_DRAFTS = ("speculative_tokens",)


class MeasuredAcceptance(BaseModel):
    """What the server measured: the acceptance length under the file's key, the draft tokens per step it was
    measured at, and the rate per draft token that gives that length."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    key: str  # the file's key
    length: float = Field(ge=1)  # tokens a verify step keeps, the bonus token counted
    draft_tokens: float = Field(gt=0)  # per step: the file's mean, else the run's stated count
    over: str  # what the server averaged over
    rate: float = Field(ge=0, le=1)

    @property
    def text(self) -> str:
        return f"{self.key} {self.length:.3g} at {self.draft_tokens:.3g} draft tokens per step, over {self.over}"


def file_acceptance(meta: dict[str, object], stated_tokens: int) -> dict[str, object]:
    """The run fields the acceptance a file saves fills (``{}``: it saves none): ``measured_acceptance``, and the draft
    tokens per step where the user stated none — the fewest the file's mean per step allows (a draft can be cut short,
    never longer than the count the server was started with). A stated count below the file's mean, a file that saves
    no count beside a run that states none, or a length more than the count + 1 is refused."""
    if "acceptance_length" not in meta:
        return {}
    key, length = str(meta["acceptance_length_field"]), float(meta["acceptance_length"])
    per_step = meta.get("draft_tokens_per_step")
    if per_step is None:
        if not stated_tokens:
            raise InvalidScenarioError(f"the file's {key} {length:.3g} is of a run with speculative decoding, and it "
                                       "saves no draft tokens per step", field="speculative_tokens",
                                       allowed="the draft tokens per step the server was started with (SGLang: "
                                               "--speculative-num-steps; ngram: --speculative-num-draft-tokens)")
        per_step = float(stated_tokens)
    elif stated_tokens and float(per_step) > stated_tokens:
        raise InvalidScenarioError(f"stated {stated_tokens} draft tokens per step, but the file's "
                                   f"{meta['draft_tokens_per_step_field']} is {float(per_step):.3g}",
                                   field="speculative_tokens", allowed=f"leave it out, or {math.ceil(float(per_step))} or more")
    per_step = float(per_step)
    if length > per_step + 1:
        raise InvalidScenarioError(f"the file's {key} {length:.3g} is more than {per_step:.3g} draft tokens per step "
                                   "and the bonus token keep", field=key, allowed=f"at most {per_step + 1:.3g}")
    measured = MeasuredAcceptance(key=key, length=length, draft_tokens=per_step, over=str(meta["acceptance_over"]),
                                  rate=rate_for_length(length, per_step))
    return {"speculative_tokens": stated_tokens or math.ceil(per_step), "measured_acceptance": measured}
