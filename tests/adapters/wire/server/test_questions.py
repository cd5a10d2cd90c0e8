"""A Wire question's answer read back as labels (``answers_of``), without a connection."""

from __future__ import annotations

import pytest

from wireproto.adapters.wire import messages as m
from wireproto.adapters.wire.server.questions import answers_of
from wireproto.agent.api import Question
from wireproto.agent.questions import AskStatus

PLACES = Question("Where?", ("Paris, France", "Paris", "Rome, Italy", "Oslo"), multi_select=True)


def labels(question: Question, answer: str) -> tuple[str, ...]:
    response = m.QuestionResponse(request_id="r", answers={question.question: answer})
    found = answers_of([question], response)
    assert found.status is AskStatus.ANSWERED
    [only] = found.labels
    return only


@pytest.mark.parametrize("answer, expected", [
    ("Paris, France", ("Paris, France",)),
    ("Paris, France, Rome, Italy", ("Paris, France", "Rome, Italy")),
    ("Paris,France,Oslo", ("Paris", "France", "Oslo")),  # not the label: a free-text piece
    ("Paris, Oslo", ("Paris", "Oslo")),
    ("Oslo,Paris, France", ("Oslo", "Paris, France")),
    ("Oslo , Paris", ("Oslo", "Paris")),
    ("Bergen, Rome, Italy", ("Bergen", "Rome, Italy")),  # free text, then a label
    ("", ()),
])
def test_multi_select_labels_with_commas_stay_whole(
    answer: str, expected: tuple[str, ...]
) -> None:
    assert labels(PLACES, answer) == expected


def test_a_single_answer_is_taken_as_given() -> None:
    one = Question("Where?", ("Paris, France", "Oslo"))
    assert labels(one, "Paris, France") == ("Paris, France",)


def test_no_answers_is_declined_and_no_response_cancelled() -> None:
    assert answers_of([PLACES], m.QuestionResponse(request_id="r", answers={})).status \
        is AskStatus.DECLINED
    assert answers_of([PLACES], None).status is AskStatus.CANCELLED


class _Counted(str):
    """An answer that counts the characters its slices copy."""

    copied = 0

    def __getitem__(self, key: object) -> str:
        piece = str.__getitem__(self, key)  # type: ignore[index]
        if isinstance(key, slice):
            _Counted.copied += len(piece)
        return piece


def test_a_long_answer_is_read_in_linear_time() -> None:
    # a hostile client's answer: every piece a label; each label check copied the rest
    answer = _Counted("Oslo, " * 20_000 + "Oslo ")
    _Counted.copied = 0
    response = m.QuestionResponse(request_id="r", answers={PLACES.question: answer})
    [found] = answers_of([PLACES], response).labels
    assert found == ("Oslo",) * 20_001
    assert _Counted.copied <= 2 * len(answer)  # (was about len(answer) ** 2 / 12)
