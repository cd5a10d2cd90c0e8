"""Asking the user: several questions at once, and out-of-band (URL) interactions.

:meth:`Turn.ask <wireproto.agent.turn.Turn.ask>` asks one multiple-choice
question. :meth:`Asking.ask_questions` asks one to four at once and says how
the request ended (:class:`AskStatus`): answered, declined, cancelled, or
unsupported by the client. :meth:`Asking.ask_url` sends the user to a web
page (e.g. a sign-in) and :meth:`Asking.complete_url` tells the client the
interaction is over.

How the adapters carry them:

* **Wire**: one ``QuestionRequest`` with one item per question (``body``,
  ``other_label``, multi-select); an empty answer map is "declined". Wire has
  no URL requests: :meth:`Asking.ask_url` is unsupported there.
* **ACP**: ``elicitation/create`` in form mode (one field per question: a
  single-select string, or a multi-select array; a question with an
  ``other_label`` accepts free text instead of a fixed list) when the client
  advertised ``elicitation.form``; URL mode with ``elicitation/complete`` when
  it advertised ``elicitation.url``. ``accept`` / ``decline`` / ``cancel``
  map to :class:`AskStatus`; a cancelled turn cancels the pending request.

A client that cannot ask gets no request at all: the status is
:attr:`AskStatus.UNSUPPORTED`.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

import msgspec

from wireproto.agent.api import Question

if TYPE_CHECKING:
    from wireproto.agent.api import Channel, ClientCapabilities, Session

__all__ = ["MAX_QUESTIONS", "Answers", "AskStatus", "Asking"]

MAX_QUESTIONS = 4
"""The most questions one request may carry (Wire's limit)."""


class AskStatus(str, enum.Enum):
    """How a question or URL request ended."""

    ANSWERED = "answered"
    DECLINED = "declined"
    CANCELLED = "cancelled"
    UNSUPPORTED = "unsupported"


class Answers(msgspec.Struct, frozen=True):
    """The outcome of :meth:`Asking.ask_questions`.

    Attributes:
        status: how the request ended.
        labels: per question (in order), the chosen labels; a free-text
            answer (the "other" choice) appears as its text. Empty when not
            answered.
    """

    status: AskStatus
    labels: tuple[tuple[str, ...], ...] = ()

    @property
    def answered(self) -> bool:
        """Whether the user answered."""
        return self.status is AskStatus.ANSWERED

    def of(self, index: int) -> tuple[str, ...]:
        """The labels chosen for question ``index`` (``()`` when none)."""
        return self.labels[index] if index < len(self.labels) else ()


def check_questions(questions: Sequence[Question]) -> None:
    """Raise ``ValueError`` unless there are 1-4 distinct questions of 2-4 distinct options."""
    if not 1 <= len(questions) <= MAX_QUESTIONS:
        raise ValueError(f"ask 1 to {MAX_QUESTIONS} questions at once, not {len(questions)}")
    texts = [q.question for q in questions]
    if len(set(texts)) != len(texts):
        raise ValueError("the questions of one request must differ")
    for q in questions:
        if not 2 <= len(set(q.options)) == len(q.options) <= 4:
            raise ValueError(f"{q.question!r} needs 2 to 4 distinct options")


class Asking:
    """The asking half of :class:`~wireproto.agent.turn.Turn` (a mixin).

    The turn provides :attr:`session`, :attr:`client` and :meth:`_channel`.
    """

    session: Session

    @property
    def client(self) -> ClientCapabilities:  # provided by Turn
        raise NotImplementedError

    def _channel(self) -> Channel:  # provided by Turn
        raise NotImplementedError

    async def ask_questions(
        self, questions: Sequence[Question], tool_call_id: str = ""
    ) -> Answers:
        """Ask 1-4 multiple-choice questions in one request.

        Args:
            questions: the questions (distinct texts); each may allow several
                labels (``multi_select``), free text (``other_label``) and
                carry a longer ``body``.
            tool_call_id: the tool call asking, if any ("" = none; Wire, which
                needs one, gets a fresh id).

        Returns:
            the :class:`Answers`; :attr:`AskStatus.UNSUPPORTED` (and no
            request) when the client cannot answer questions.

        Raises:
            ValueError: not 1-4 questions, two with the same text, or a
                question without 2-4 distinct options.
        """
        check_questions(questions)
        if not self.client.questions:
            return Answers(AskStatus.UNSUPPORTED)
        channel = self._channel()
        ask_many = getattr(channel, "ask_questions", None)
        if ask_many is not None:  # the channel makes up a call id if the protocol needs one
            answers: Answers = await ask_many(self.session, tool_call_id, list(questions))
            return answers
        call_id = tool_call_id or _call_id()
        labels = [tuple(await channel.ask(self.session, call_id, q)) for q in questions]
        status = AskStatus.ANSWERED if any(labels) else AskStatus.DECLINED
        return Answers(status, tuple(labels) if any(labels) else ())

    async def ask_url(self, message: str, url: str, *, tool_call_id: str = "",
                      elicitation_id: str = "") -> AskStatus:
        """Ask the user to open ``url`` and complete something there (e.g. a sign-in).

        Never use it to collect secrets in the conversation itself: the page
        does that. Call :meth:`complete_url` with the same id once the
        interaction is over.

        Args:
            message: why the user should open it.
            url: the page (shown in full to the user before opening).
            tool_call_id: the tool call asking, if any.
            elicitation_id: the interaction's id, for :meth:`complete_url`
                (default: a fresh one, for an interaction never completed).

        Returns:
            :attr:`AskStatus.ANSWERED` when the user agreed to open it;
            ``UNSUPPORTED`` (no request sent) when the client cannot.
        """
        ask_url = getattr(self._channel(), "ask_url", None) if self.client.url_questions else None
        if ask_url is None:
            return AskStatus.UNSUPPORTED
        status: AskStatus = await ask_url(
            self.session, tool_call_id, elicitation_id or str(uuid.uuid4()), message, url
        )
        return status

    async def complete_url(self, elicitation_id: str) -> None:
        """Tell the client the URL interaction ``elicitation_id`` is finished."""
        complete = getattr(self._channel(), "complete_url", None)
        if self.client.url_questions and complete is not None:
            await complete(self.session, elicitation_id)


def _call_id() -> str:
    return f"call_{uuid.uuid4().hex[:16]}"
