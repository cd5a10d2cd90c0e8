"""The agent runtime: sessions, turns, history and options for one agent.

One :class:`Runtime` serves one :class:`~wireproto.agent.api.Agent` to any
number of connections (each adapter connection is a
:class:`~wireproto.agent.api.Channel`). It owns the in-memory sessions, runs
one turn at a time per session, records every event in its
:class:`~wireproto.agent.store.Store` and replays stored history.
Sessions are independent: cancelling one never touches another.

History is what the client was sent: an event is recorded once the
channel took it (or when the connection is gone, so a dropped client still
leaves a complete history). An event whose send was cancelled — the turn was
cancelled while a slow client held it back — is neither delivered nor
recorded, so a later load or replay shows exactly what the client saw live.

Records are grouped per burst when the channel allows it: a channel whose
``flushes_history`` attribute is true promises to call
:meth:`Runtime.flush_history` right before it writes anything to its
client (the ACP and Wire adapters do, from the peer's writer). The runtime
then holds a session's records back and writes them with one store append,
at the latest before the bytes of the messages they describe leave the
process: a crash (``kill -9``) still loses nothing the client was sent. With
any other channel each event is written to the store as soon as it is sent.
Reads (load, resume, list) and session ends write what is held back first.

The conversation a turn reads (:meth:`Runtime.history`) is kept in memory
once the agent has read one: the first read of a session not kept yet
builds it from the store, and from then on every session opened is kept
(later events folded in as they are recorded). An agent that never reads
it pays nothing per event.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from datetime import datetime, timezone

import anyio
import msgspec

from wireproto.agent.api import Agent, Channel, McpServer, Session, SessionInfo
from wireproto.agent.content import ContentBlock
from wireproto.agent.events import (
    Event,
    HistoryCleared,
    Notice,
    OptionChanged,
    PlanModeChanged,
    StopReason,
    TurnEnded,
    UserMessage,
)
from wireproto.agent.history import Conversation, HistoryMessage
from wireproto.agent.store import StoreArg, open_store, title_of
from wireproto.agent.turn import Turn, new_id
from wireproto.errors import (
    AgentError,
    AgentFailed,
    Busy,
    ConnectionClosed,
    InvalidArgument,
    NotFound,
    first_leaf,
)

__all__ = ["Runtime"]

log = logging.getLogger(__name__)

_LIVE_ONLY = (Notice,)  # events never written to history
_utc_now = functools.partial(datetime.now, timezone.utc)


class Runtime:
    """Serve one agent: session lifecycle, turns, history.

    Args:
        agent: the agent.
        store: where history lives: a :class:`~wireproto.agent.store.Store`,
            a directory (JSON Lines files there), or ``None`` for a new
            :class:`~wireproto.agent.store.MemoryStore` (nothing is written
            to disk; the ``wireproto`` CLI passes a
            :class:`~wireproto.agent.store.JsonlStore` under
            ``$WIREPROTO_HOME/sessions``).

    Raises:
        TypeError: ``agent`` is a class rather than an agent (``Echo``, not ``Echo()``).
    """

    def __init__(self, agent: Agent, store: StoreArg = None) -> None:
        if isinstance(agent, type):  # (its methods would fail later, missing ``self``)
            raise TypeError(f"expected an agent, got the class {agent.__name__}: "
                            f"pass an instance, {agent.__name__}()")
        self.agent = agent
        self.store = open_store(store)
        self.sessions: dict[str, Session] = {}
        self._held: dict[str, list[Event]] = {}  # records held back, by session id
        # the conversations kept in memory (see the module docstring), by session id
        self._conversations: dict[str, Conversation] = {}
        self._keep_conversations = False  # the agent read one: keep every session's

    # ------------------------------------------------------------ sessions

    def _defaults(self) -> dict[str, str | bool]:
        return {opt.id: opt.default for opt in self.agent.options}

    async def new_session(
        self,
        channel: Channel | None,
        cwd: str,
        *,
        roots: Sequence[str] = (),
        mcp_servers: Sequence[McpServer] = (),
        session_id: str | None = None,
    ) -> Session:
        """Create a session (persisted at once) bound to ``channel``.

        When the agent's ``session_started`` raises, nothing of the session is
        kept (its caller never gets its id).
        """
        sid = session_id or new_id("sess")
        session = Session(sid, cwd, roots=roots, mcp_servers=mcp_servers, options=self._defaults())
        session.channel = channel
        self.store.create(sid, cwd, list(roots))
        self.sessions[sid] = session
        if self._keep_conversations:
            self._conversations[sid] = Conversation()
        try:
            await self.agent.session_started(session, "new")
        except BaseException:
            self.sessions.pop(sid, None)
            self._conversations.pop(sid, None)
            self.store.delete(sid)
            raise
        return session

    async def open_session(
        self,
        channel: Channel | None,
        session_id: str,
        cwd: str | None = None,
        *,
        roots: Sequence[str] = (),
        mcp_servers: Sequence[McpServer] = (),
        replay: bool = False,
    ) -> Session:
        """Load (``replay=True``) or resume a stored session, bound to ``channel``.

        With ``replay`` the whole history is sent through ``channel`` before
        this returns. When that or the agent's ``session_started`` fails, the
        session is left as it was (stored, and bound to its previous
        connection if it had one).

        Raises:
            NotFound: no such session.
            Busy: the session runs a turn on another connection.
        """
        live = self.sessions.get(session_id)
        if live is not None and live.turn is not None:
            raise Busy("the session is running a turn")
        self.flush_history()
        stored = self.store.load(session_id)
        session = Session(
            session_id, cwd or stored.cwd, roots=roots or stored.roots, mcp_servers=mcp_servers,
            options={**self._defaults(), **stored.options},
        )
        session.plan_mode = stored.plan_mode
        session.title = stored.title
        session.updated_at = stored.updated_at
        session.channel = channel
        self.sessions[session_id] = session
        if self._keep_conversations:
            self._conversations[session_id] = Conversation.from_events(stored.events)
        try:
            if replay and channel is not None:
                for event in stored.events:
                    await channel.send(session, event, replay=True)
            await self.agent.session_started(session, "load" if replay else "resume")
        except BaseException:  # (the stored session stays as it was; so does a live one)
            if live is None:
                self.sessions.pop(session_id, None)
                self._conversations.pop(session_id, None)
            else:
                self.sessions[session_id] = live
            raise
        return session

    def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None
    ) -> tuple[list[SessionInfo], str | None]:
        """List stored sessions, newest activity first (page size 50).

        Raises:
            InvalidArgument: the cursor is invalid.
        """
        self.flush_history()
        found, next_cursor = self.store.list(cwd=cwd, cursor=cursor)
        return [self._live_title(info) for info in found], next_cursor

    def _live_title(self, info: SessionInfo) -> SessionInfo:
        """``info`` with the title of its live session (which an agent may have set)."""
        session = self.sessions.get(info.session_id)
        if session is None or session.title is None or session.title == info.title:
            return info
        return msgspec.structs.replace(info, title=session.title)

    async def close_session(self, session_id: str) -> None:
        """Cancel the session's turn and free it (history stays stored)."""
        session = self.sessions.pop(session_id, None)
        if session is None:
            return
        self._conversations.pop(session_id, None)
        try:
            await self._stop_turn(session)
        finally:
            self.flush_history()
        await self.agent.session_closed(session)

    async def delete_session(self, session_id: str) -> None:
        """Close and delete a session; unknown ids succeed (idempotent)."""
        await self.close_session(session_id)
        self._held.pop(session_id, None)
        self.store.delete(session_id)

    async def detach(self, channel: Channel) -> None:
        """Close every session bound to ``channel`` (its connection ended)."""
        for session in [s for s in self.sessions.values() if s.channel is channel]:
            await self.close_session(session.id)

    async def _stop_turn(self, session: Session) -> None:
        turn = session.turn
        if turn is None:
            return
        turn.cancel()
        with anyio.move_on_after(5, shield=True):
            await turn.done.wait()

    # -------------------------------------------------------------- events

    async def emit(self, session: Session, event: Event) -> None:
        """Send ``event`` to the session's client, then record it (unless live-only).

        Raises:
            ConnectionClosed: the client is gone (the event is recorded first).
        """
        channel = session.channel
        if channel is not None:
            try:
                await channel.send(session, event)
            except ConnectionClosed:
                self._record(session, event)
                self.flush_history()  # nothing will be written to that client
                raise
        self._record(session, event)

    def _record(self, session: Session, event: Event) -> None:
        session.updated_at = _utc_now()
        if isinstance(event, _LIVE_ONLY):
            return
        sid = session.id
        if self._conversations:
            conversation = self._conversations.get(sid)
            if conversation is not None:
                conversation.add(event)
        if getattr(session.channel, "flushes_history", False):
            held = self._held.get(sid)
            if held is None:
                self._held[sid] = [event]
            else:
                held.append(event)
            return
        if self._held:
            self.flush_history()  # keep the order of a session's records
        self.store.append(session.id, event)

    def flush_history(self) -> None:
        """Write the records held back (one store append per session).

        Channels with ``flushes_history`` call this before they write to
        their client (see the module docstring). It never raises: a store
        failure is logged and those records are lost.
        """
        if not self._held:
            return
        held, self._held = self._held, {}
        for session_id, events in held.items():
            try:
                self.store.append(session_id, *events)
            except Exception:
                log.exception("history of session %s: %d event(s) not recorded",
                              session_id, len(events))

    def history(self, session: Session) -> list[HistoryMessage]:
        """The session's conversation so far, as typed messages (from memory).

        Everything recorded counts, the running turn's prompt and output
        included; a history clear empties it. The runtime's first call
        reads the session's history from the store once; from then on the
        conversations of open sessions are kept current in memory.
        """
        conversation = self._conversations.get(session.id)
        if conversation is None:
            self._keep_conversations = True
            conversation = self._stored_conversation(session)
            if self.sessions.get(session.id) is session:  # (open: kept current from now on)
                self._conversations[session.id] = conversation
        return conversation.messages

    def _stored_conversation(self, session: Session) -> Conversation:
        """The conversation of what the store holds for ``session`` (empty: none)."""
        self.flush_history()
        try:
            events = self.store.load(session.id).events
        except NotFound:
            events = []
        return Conversation.from_events(events)

    # --------------------------------------------------------------- turns

    async def prompt(self, session: Session, content: list[ContentBlock]) -> StopReason:
        """Run one turn of ``session`` with the prompt ``content``.

        However :meth:`Agent.prompt` ends (returns, is cancelled, raises, or
        returns something that is not a :class:`StopReason`), the turn ends
        properly: its open tool calls are failed and ``TurnEnded`` is sent
        and recorded (with ``error`` set when the agent failed).

        Returns:
            the stop reason (``CANCELLED`` after :meth:`cancel`).

        Raises:
            Busy: a turn is already running in this session.
            AgentError: the agent raised it (the turn is over).
            AgentFailed: the agent raised anything else, or returned no
                :class:`StopReason` (chained to the cause; logged with the
                session and turn).
            ConnectionClosed: the client went away (the turn end is still
                recorded).
        """
        if session.turn is not None:
            raise Busy("An agent turn is already in progress")
        turn = Turn(self, session, content)
        session.turn = turn
        try:
            await self.emit(session, UserMessage(content=content, message_id=turn.id))
            if session.title is None:
                session.title = title_of(content)
            stop, error = await self._run_agent(turn)
            failure = None
            if error is not None and not isinstance(error, ConnectionClosed):
                failure = self._failure(turn, error)
            closed = await self._end_turn(turn, stop, failure)
            if failure is not None:
                raise failure from error
            if error is not None:
                raise error
            if closed is not None:
                raise closed
            return stop
        finally:
            session.turn = None
            turn.finish()

    async def _end_turn(
        self, turn: Turn, stop: StopReason, failure: AgentError | None
    ) -> ConnectionClosed | None:
        """Fail the open tool calls and record ``TurnEnded``, also when the client is gone."""
        closed: ConnectionClosed | None = None
        try:
            await turn.close_open_calls()
        except ConnectionClosed as exc:
            closed = exc
        try:
            await self.emit(turn.session, TurnEnded(
                stop_reason=stop, error=None if failure is None else failure.message))
        except ConnectionClosed as exc:  # recorded all the same
            closed = closed or exc
        return closed

    async def _run_agent(self, turn: Turn) -> tuple[StopReason, Exception | None]:
        """Run :meth:`Agent.prompt`; returns the stop reason and what it raised."""
        result: object = StopReason.CANCELLED
        found = self.agent.command_handler(turn.text)
        try:
            with turn.scope:
                if found is None:
                    result = await self.agent.prompt(turn)
                else:
                    handler, argument = found
                    result = await handler(turn, argument)
                    result = StopReason.END_TURN if result is None else result
        except Exception as exc:
            return StopReason.END_TURN, exc
        if turn.cancelled:
            return StopReason.CANCELLED, None
        if isinstance(result, StopReason):
            return result, None
        try:
            return StopReason(result), None  # its value, e.g. "end_turn"
        except ValueError:
            return StopReason.END_TURN, TypeError(
                f"{type(self.agent).__name__}.prompt() returned {result!r}, not a StopReason")

    def _failure(self, turn: Turn, error: Exception) -> AgentError:
        """The error answering a failed turn (an :class:`AgentError` stays itself)."""
        if isinstance(error, AgentError):
            return error
        log.error("session %s, turn %s: %s.prompt() failed: %s: %s", turn.session.id, turn.id,
                  type(self.agent).__name__, type(error).__name__, error,
                  exc_info=(type(error), error, error.__traceback__))
        leaf = first_leaf(error)
        data = ({"type": type(leaf).__name__, "message": str(leaf)}
                if self.agent.error_details else None)
        return AgentFailed("Internal error", data)

    def cancel(self, session: Session) -> bool:
        """Cancel the session's running turn; ``False`` when none runs."""
        if session.turn is None:
            return False
        session.turn.cancel()
        return True

    def steer(self, session: Session, content: list[ContentBlock]) -> bool:
        """Queue steering input into the running turn; ``False`` when none runs."""
        if session.turn is None:
            return False
        session.turn.steer(content)
        return True

    # ------------------------------------------------------------- options

    async def set_option(
        self, session: Session, option_id: str, value: str | bool, *, announce: bool = False
    ) -> None:
        """Set an option (validated against the agent's declaration) and record it.

        Args:
            session: the session.
            option_id: the declared option's id.
            value: the new value (a boolean option also takes its select strings).
            announce: the agent changed it (:meth:`Turn.set_option`): send
                :class:`OptionChanged` to the client. Otherwise the client asked
                for the change (the adapter answers it) and
                :meth:`Agent.option_changed` is called.

        Raises:
            InvalidArgument: unknown option or value.
        """
        for opt in self.agent.options:
            if opt.id == option_id:
                session.options[option_id] = opt.coerce(value)
                break
        else:
            raise InvalidArgument(f"unknown option {option_id!r}")
        event = OptionChanged(option_id, session.options[option_id])
        if announce:
            await self.emit(session, event)
            return
        self._record(session, event)
        await self.agent.option_changed(session, option_id, session.options[option_id])

    async def set_plan_mode(self, session: Session, enabled: bool) -> None:
        """Switch plan mode; the change is recorded and sent."""
        session.plan_mode = enabled
        await self.emit(session, PlanModeChanged(enabled=enabled))

    async def clear_history(self, session: Session) -> None:
        """Drop history before now from later loads and replays."""
        await self.emit(session, HistoryCleared())

