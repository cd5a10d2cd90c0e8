"""Bindings: one running external harness for one host session and one host agent.

Theory of operation
-------------------
:meth:`Host.bind <wireproto.host.Host.bind>` starts the executor's command
with our ACP client (:func:`~wireproto.adapters.acp.client.connect.connect_acp`),
and opens the harness's session: ``session/resume`` (or ``session/load``)
when the host saved the harness's session id and the harness can, else
``session/new``. When the binding's policy injects the bridge, the session's
``mcpServers`` get one stdio entry running ``wireproto mcp-bridge`` whose
``env`` carries the channel address and a credential minted for this
binding only.

A :class:`Binding` records what the harness reports about itself as
observations (:class:`~wireproto.host.store.Observation`), from the table
:data:`AUTH_OBSERVATIONS`:

* an ACP error ``-32000`` (authentication required) -> ``needs_authentication``
  (with the advertised ``authMethods`` that must be completed);
* a successful ``authenticate`` -> ``authenticated``;
* any other failure of session setup or authentication -> ``unknown``.

Prompts are checked against the harness's advertised ``promptCapabilities``
before anything is sent: MCP connectivity says nothing about whether a
harness takes images or audio. :meth:`Binding.prompt` gives the client's
turn: ``async with binding.prompt(text) as turn: async for update in turn``
sees the turn's updates (messages, tool calls, plans) and ends with its stop
reason; ``await binding.prompt(text)`` collects the text instead.
:meth:`Binding.cancel` cancels the running turn.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Generator, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from msgspec import UNSET

from wireproto.adapters.acp import schema as s
from wireproto.adapters.acp.client.connection import ClientConnection
from wireproto.adapters.acp.client.ext import CALL_TIMEOUT
from wireproto.adapters.acp.client.turn import PromptTurn
from wireproto.errors import InvalidArgument, LocalProtocolError, RpcError
from wireproto.host.config import ExecutorConfig
from wireproto.host.policy import Caller, Resolved
from wireproto.host.store import AuthState, Observation, now

if TYPE_CHECKING:
    from wireproto.host.store import HostStore

__all__ = [
    "AUTH_OBSERVATIONS",
    "AUTH_REQUIRED",
    "PROMPT_KINDS",
    "Binding",
    "BindingPrompt",
    "PromptOutcome",
]

log = logging.getLogger(__name__)

AUTH_REQUIRED = -32000
"""The ACP error code "authentication required"."""

AUTH_OBSERVATIONS: dict[int | None, AuthState] = {
    AUTH_REQUIRED: AuthState.NEEDS_AUTHENTICATION,
    None: AuthState.AUTHENTICATED,  # success of authenticate
}
"""ACP error code (``None``: success) -> observed state; anything else is ``unknown``."""

PROMPT_KINDS: dict[type, tuple[str, Callable[[s.PromptCapabilities], bool]]] = {
    s.ImageContent: ("image", lambda c: c.image),
    s.AudioContent: ("audio", lambda c: c.audio),
    s.EmbeddedResource: ("embeddedContext", lambda c: c.embedded_context),
}
"""Content block type -> (capability name, whether the harness advertised it)."""


@dataclasses.dataclass(frozen=True)
class PromptOutcome:
    """The end of a prompt turn: the stop reason and the agent's text."""

    stop_reason: str | None
    text: str


class Binding:
    """A running external harness bound to one host session and agent.

    Created by :meth:`Host.bind <wireproto.host.Host.bind>`; do not build it
    yourself.

    Attributes:
        id: the binding id.
        caller: the identity ``(binding, session, agent)`` the bridge acts for.
        executor: the executor running the harness.
        cwd: the working directory given to the harness.
        inject: whether the bridge was injected, and which layer (or
            default) decided it.
        bridge_reason: a one-line explanation of why there is (or is no) bridge.
        mcp_servers: the ``mcpServers`` given to the harness.
        harness_session_id: the harness's session id (``None`` until opened).
        how: ``"new"``, ``"resume"`` or ``"load"`` once opened.
        ended: the binding ended (closed, or superseded by a rebinding).
        revoked_reason: why the bridge credential was revoked (``None``: it was not).
    """

    def __init__(
        self,
        caller: Caller,
        executor: ExecutorConfig,
        cwd: str,
        inject: Resolved,
        mcp_servers: Sequence[s.McpServerStdio],
        store: HostStore,
        approved_tools: Sequence[str] | None = None,
        *,
        on_open: Callable[[Binding], None] | None = None,
    ) -> None:
        self.caller = caller
        self.id = caller.binding_id
        self.session_id = caller.session_id
        self.agent = caller.agent
        self.executor = executor
        self.cwd = cwd
        self.inject = inject
        self.approved_tools = tuple(approved_tools) if approved_tools is not None else None
        self.mcp_servers = list(mcp_servers)
        self.bridge_reason = (
            f"bridge injected ({inject.source})" if inject.value
            else f"no bridge: {inject.source or 'injection is off'}"
        )
        self.harness_session_id: str | None = None
        self.how: str | None = None
        self.ended = False
        self.revoked_reason: str | None = None
        self._store = store
        self._client: ClientConnection | None = None
        self._resume_id: str | None = None
        self._on_open = on_open

    def __repr__(self) -> str:  # the env of mcp_servers holds the credential: never shown
        return f"Binding({self.id!r}, session={self.session_id!r}, agent={self.agent!r})"

    @property
    def bridged(self) -> bool:
        """Whether the bridge was injected into the harness's session."""
        return bool(self.mcp_servers)

    @property
    def client(self) -> ClientConnection:
        """The ACP connection to the harness (still there after a rebinding
        superseded this binding, until its ``async with`` block ends).

        Raises:
            LocalProtocolError: the binding is not running.
        """
        if self._client is None:
            raise LocalProtocolError(f"binding {self.id} is not running")
        return self._client

    @property
    def auth_methods(self) -> list[str]:
        """The ids of the authentication methods the harness advertised."""
        response = self.client.initialize_response
        methods = response.auth_methods if response is not None else []
        return [m.id for m in methods if isinstance(m, (s.AuthMethodAgent, s.AuthMethodTerminal))]

    @property
    def prompt_capabilities(self) -> s.PromptCapabilities:
        """What the harness advertised it accepts in prompts."""
        return self.client.agent_capabilities.prompt_capabilities

    # ------------------------------------------------------- observations

    def observe(self, state: AuthState, source: str, **detail: Any) -> Observation:
        """Save an authentication observation for this binding's session."""
        observation = Observation(
            kind="auth", state=state.value, source=source, cwd=self.cwd, observed_at=now(),
            binding_id=self.id, agent=self.agent, detail=detail,
        )
        self._store.observe(self.session_id, observation)
        log.info("binding %s: auth %s (%s)", self.id, state.value, source)
        return observation

    def _observe_error(self, method: str, exc: RpcError) -> None:
        state = AUTH_OBSERVATIONS.get(exc.code, AuthState.UNKNOWN)
        detail: dict[str, Any] = {"message": exc.message}
        if state is AuthState.NEEDS_AUTHENTICATION:
            detail["authMethods"] = self.auth_methods
        self.observe(state, f"acp {method} error {exc.code}", **detail)

    # ------------------------------------------------------------ session

    async def _start(
        self, client: ClientConnection, resume_id: str | None,
        timeout: float | None = CALL_TIMEOUT,
    ) -> bool:
        """Open the harness's session; ``False`` when it first needs authentication."""
        self._client = client
        self._resume_id = resume_id
        return await self._open(timeout)

    async def _open(self, timeout: float | None) -> bool:
        client = self.client
        caps = client.agent_capabilities
        rid = self._resume_id
        resume = caps.session_capabilities.resume
        can_resume = resume is not UNSET and resume is not None
        method = ("session/resume" if rid and can_resume
                  else "session/load" if rid and caps.load_session else "session/new")
        try:
            if method == "session/resume":
                assert rid is not None
                await client.resume_session(rid, self.cwd, self.mcp_servers, timeout=timeout)
                sid = rid
            elif method == "session/load":
                assert rid is not None
                await client.load_session(rid, self.cwd, self.mcp_servers, timeout=timeout)
                sid = rid
            else:
                opened = await client.new_session(self.cwd, self.mcp_servers, timeout=timeout)
                sid = opened.session_id
        except RpcError as exc:
            self._observe_error(method, exc)
            if exc.code == AUTH_REQUIRED:
                return False
            raise
        self.harness_session_id = sid
        self.how = method.removeprefix("session/")
        if self._on_open is not None:
            self._on_open(self)
        return True

    @property
    def opened(self) -> bool:
        """Whether the harness's session is open (not waiting for authentication)."""
        return self.harness_session_id is not None

    async def authenticate(
        self, method_id: str, *, timeout: float | None = CALL_TIMEOUT
    ) -> None:
        """Authenticate with the harness, then open its session if it was waiting.

        Raises:
            RpcError: the harness refused (observed as needing authentication
                for ``-32000``, else ``unknown``).
            TimeoutError: no answer within ``timeout`` seconds (the request is
                cancelled; observed as ``unknown``); ``None`` waits forever.
        """
        try:
            await self.client.authenticate(method_id, timeout=timeout)
        except RpcError as exc:
            self._observe_error("authenticate", exc)
            raise
        except TimeoutError:
            self.observe(AuthState.UNKNOWN, "acp authenticate: no answer", timeout=timeout)
            raise
        self.observe(AUTH_OBSERVATIONS[None], "acp authenticate", methodId=method_id)
        if not self.opened:
            await self._open(timeout)

    def check_prompt(self, blocks: Sequence[s.ContentBlock]) -> None:
        """Refuse content the harness did not advertise.

        Raises:
            InvalidArgument: a block needs a prompt capability the harness lacks.
        """
        caps = self.prompt_capabilities
        for block in blocks:
            entry = PROMPT_KINDS.get(type(block))
            if entry is not None and not entry[1](caps):
                name = entry[0]
                raise InvalidArgument(
                    f"the external harness {self.executor.id!r} does not accept {name} prompts "
                    f"(it did not advertise promptCapabilities.{name})"
                )

    def prompt(self, prompt: str | Sequence[s.ContentBlock]) -> BindingPrompt:
        """A prompt turn on the harness: iterate it in ``async with``, or await its text.

        Example::

            async with binding.prompt("summarise a.txt") as turn:
                async for update in turn:      # messages, tool calls, plans
                    ...
            print(turn.stop_reason)

            outcome = await binding.prompt("hello")   # PromptOutcome(stop_reason, text)

        A turn has no deadline; leaving the block early or cancelling the
        task cancels it on the harness (as :meth:`cancel` does).

        Raises (when run):
            InvalidArgument: content the harness does not accept (nothing was sent).
            LocalProtocolError: the session is not open (authenticate first), or
                the binding ended (e.g. superseded by a rebinding).
            RpcError: the harness answered with an error.
        """
        blocks: list[s.ContentBlock] = (
            [s.TextContent(text=prompt)] if isinstance(prompt, str) else list(prompt))
        return BindingPrompt(self, blocks)

    async def cancel(self) -> None:
        """Cancel the harness's running turn (its prompt then ends ``cancelled``).

        Raises:
            LocalProtocolError: the session is not open.
        """
        if self.harness_session_id is None:
            raise LocalProtocolError(f"binding {self.id}: the harness's session is not open")
        await self.client.cancel(self.harness_session_id)

    def _turn(self, blocks: list[s.ContentBlock]) -> PromptTurn:
        if self.ended:
            raise LocalProtocolError(f"binding {self.id} has ended")
        self.check_prompt(blocks)
        if self.harness_session_id is None:
            raise LocalProtocolError(
                f"binding {self.id}: the harness's session is not open (authenticate first)")
        return self.client.prompt(self.harness_session_id, blocks)


class BindingPrompt:
    """One prompt of a binding.

    ``async with`` gives the ACP client's
    :class:`~wireproto.adapters.acp.client.turn.PromptTurn`; ``await`` collects a
    :class:`PromptOutcome`.
    """

    def __init__(self, binding: Binding, blocks: list[s.ContentBlock]) -> None:
        self.binding = binding
        self.blocks = blocks
        self._turn: PromptTurn | None = None

    async def __aenter__(self) -> PromptTurn:
        self._turn = self.binding._turn(self.blocks)
        try:
            return await self._turn.__aenter__()
        except RpcError as exc:
            self._observe(exc)
            raise

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._turn is not None
        if isinstance(exc, RpcError):
            self._observe(exc)
        try:
            await self._turn.__aexit__(exc_type, exc, tb)
        except RpcError as error:
            self._observe(error)
            raise

    def __await__(self) -> Generator[Any, None, PromptOutcome]:
        return self._collect().__await__()

    async def _collect(self) -> PromptOutcome:
        parts: list[str] = []
        async with self as turn:
            async for update in turn:
                if (isinstance(update, s.AgentMessageChunk)
                        and isinstance(update.content, s.TextContent)):
                    parts.append(update.content.text)
        return PromptOutcome(turn.stop_reason, "".join(parts))

    def _observe(self, exc: RpcError) -> None:
        if exc.code == AUTH_REQUIRED:
            self.binding._observe_error("session/prompt", exc)
