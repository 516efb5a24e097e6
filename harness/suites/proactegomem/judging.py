"""The matcher's semantic similarity from the project's judge (paper appendix K.5).

For every prediction / ground-truth pair that passes the time gate (the
start window at both levels, and overlap at the Intervention Level), the
judge gets the paper's template with the level's instruction: the ground-truth
object against the tracker's `name`, or the templated reference ("You just
turned on / opened {object}", ...) against the message. The reply must be one
number in [0, 1]; anything else is retried, then recorded as unjudged
(similarity 0: no edge). At the Intervention Level a tracker stopped with a
message also gets the closing-message judge (section 5.6): that message
against the task's templated outcome; scoring reads it for matched pairs.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator, Mapping, Sequence

from apmbench.harness.errors import JudgeReplyError
from apmbench.harness.scoring.judge.judging import SCORED, JudgeOutcome, JudgeRequest
from apmbench.harness.suites.base import Judging, MutableRow
from apmbench.harness.suites.proactegomem import prompts
from apmbench.harness.suites.proactegomem.dataset import Dataset
from apmbench.harness.suites.proactegomem.metrics import (
    DEFAULT,
    Params,
    Row,
    Span,
    acted_steps,
    clip_groups,
    gated,
    predictions,
    rows,
    truths,
)
from apmbench.harness.suites.proactegomem.tools import INTERVENTION

CLOSE = "close|"
"""Key prefix of a closing-message request (the pair's own key follows)."""
CORRECTION = (
    "That reply could not be used ({problem}). Reply with ONLY a single number between 0.0 and 1.0."
)


def read_similarity(reply: str) -> dict[str, float]:
    text = reply.strip()
    try:
        value = float(text)
    except ValueError:
        raise JudgeReplyError(f"not a single number: {text[:60]!r}") from None
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise JudgeReplyError(f"{value} is not between 0.0 and 1.0")
    return {"similarity": value}


def _pairs(instances: Sequence[Row], params: Params) -> Iterator[tuple[str, Row, str, Span, Span]]:
    """(request id, the group's first row, level, truth, prediction) for every gated pair."""
    for (level, clip), group in clip_groups(instances).items():
        head = group[0]
        preds, _ = predictions(level, head["task"], acted_steps(group), head["clip_end_s"])
        gts = truths(level, head["task"], head["ground_truth"])
        for i, p in enumerate(preds):
            for j, t in enumerate(gts):
                if gated(p, t, level, params):
                    yield f"{level}|{clip}|{i}|{j}", head, level, t, p


def _request(key: str, instruction: str, ref: str, cand: str) -> JudgeRequest:
    content = prompts.JUDGE_TEMPLATE.format(instruction=instruction, ref=ref, cand=cand)
    return JudgeRequest(key, [{"role": "user", "content": content}], CORRECTION, read_similarity)


def requests(instances: Sequence[MutableRow], params: Params = DEFAULT) -> list[JudgeRequest]:
    out = []
    for key, head, level, truth, pred in _pairs(rows(instances), params):
        if level == INTERVENTION:
            out.append(_request(key, prompts.JUDGE_INTERVENTION, truth.text, pred.text))
            if pred.closing:
                # Section 5.6: the message that closed the tracker, against the outcome.
                ref = prompts.CLOSING_REFERENCES[head["task"]].format(object=truth.text)
                out.append(_request(f"{CLOSE}{key}", prompts.JUDGE_CLOSING, ref, pred.closing))
        else:
            template = prompts.NOTIFICATION_REFERENCES[head["task"]]
            ref = template.format(object=truth.text)
            out.append(_request(key, prompts.JUDGE_NOTIFICATION, ref, pred.text))
    return out


def apply(instances: Sequence[MutableRow], outcomes: Mapping[str, JudgeOutcome]) -> None:
    """Each group's first row gets {"i,j": similarity or None (unjudged)} for its gated pairs."""
    heads = {(lv, clip): group[0] for (lv, clip), group in clip_groups(rows(instances)).items()}
    for key, outcome in outcomes.items():
        level, clip, i, j = key.removeprefix(CLOSE).split("|")
        head = heads[(level, clip)]
        value = None
        if outcome.status == SCORED and outcome.verdict is not None:
            value = float(outcome.verdict["similarity"])
        if key.startswith(CLOSE):
            head.setdefault("closing", {})[f"{i},{j}"] = value
        else:
            head.setdefault("similarity", {})[f"{i},{j}"] = value


def templates_sha256() -> str:
    """Identifies the judge's wording: every template and reference it may be sent."""
    text = "\n".join(
        (prompts.JUDGE_TEMPLATE, prompts.JUDGE_INTERVENTION, prompts.JUDGE_NOTIFICATION,
         *prompts.NOTIFICATION_REFERENCES.values(), CORRECTION,
         prompts.JUDGE_CLOSING, *prompts.CLOSING_REFERENCES.values())
    )  # fmt: skip
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


JUDGING: Judging[Dataset] = Judging(
    lambda _dataset, instances: requests(instances), apply, templates_sha256
)
