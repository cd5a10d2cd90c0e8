"""The host: sessions, bindings of external harnesses, and the tool bridge's gateway.

Theory of operation
-------------------
``async with Host(config, tools, store) as host`` starts the loopback
:class:`~wireproto.host.channel.BridgeChannel` (the only task the host owns).
Then:

* :meth:`Host.new_session` saves a session record (executor, cwd, profile);
  :meth:`Host.set_override` / :meth:`Host.set_profile` change its settings;
* ``async with host.bind(session_id, agent=...) as binding`` starts a
  binding (:mod:`wireproto.host.binding`). A previous binding of the same
  session and agent is ended first, and that agent's observations are
  cleared (the binding changed). The injection choice is resolved once, at
  bind time (:meth:`~wireproto.host.policy.Policy.inject`);
* each bridge request is answered by :meth:`Host.list_tools` /
  :meth:`Host.call_tool` with the identity of its credential: the binding
  must still be running and hold that identity, and the policy is rebuilt
  from the saved settings and checked again, every time.

**Revocation.** A binding's credential is revoked when it ends (or is
superseded), when the host closes, and as soon as a settings change makes
its injection resolve to false; a change to true waits for the next binding.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import anyio
import anyio.abc
import jsonschema

from wireproto.adapters.acp import schema as s
from wireproto.adapters.acp.client.connect import connect_acp
from wireproto.adapters.acp.client.ext import CALL_TIMEOUT
from wireproto.adapters.acp.client.state import PermissionHandler, UpdateHandler
from wireproto.adapters.mcp import messages as m
from wireproto.errors import AgentError, InvalidArgument, LocalProtocolError, RpcError
from wireproto.host.binding import Binding
from wireproto.host.channel import (
    ADDRESS_ENV,
    CREDENTIAL_INVALID,
    TOKEN_ENV,
    BridgeChannel,
    Credentials,
)
from wireproto.host.config import ConfigError, ExecutorConfig, HostConfig, check_setting
from wireproto.host.permissions import PermissionDecider
from wireproto.host.policy import MAIN_AGENT, Caller, NativeTool, Policy
from wireproto.host.store import HostStore, Observation, SessionRecord
from wireproto.jsonrpc.messages import ErrorCode

__all__ = ["DEFAULT_BRIDGE_COMMAND", "Host"]

log = logging.getLogger(__name__)

DEFAULT_BRIDGE_COMMAND: tuple[str, ...] = (sys.executable, "-m", "wireproto", "mcp-bridge")
"""``wireproto mcp-bridge`` with the current interpreter."""


class Host:
    """A host that runs external harnesses for its sessions and bridges its tools to them.

    Args:
        config: the parsed host configuration (prefix, executors, settings).
        tools: the native tools (plain, ``context`` and ``subagents`` groups).
        store: where sessions and observations are saved (a directory or a store).
        bridge_command: the MCP server command given to harnesses
            (default :data:`DEFAULT_BRIDGE_COMMAND`).
    """

    def __init__(
        self,
        config: HostConfig,
        tools: Sequence[NativeTool],
        store: HostStore | str | os.PathLike[str],
        *,
        bridge_command: Sequence[str] | None = None,
    ) -> None:
        self.config = config
        self.tools: dict[str, NativeTool] = {}
        for tool in tools:
            if tool.name in self.tools:
                raise ValueError(f"duplicate native tool {tool.name!r}")
            self.tools[tool.name] = tool
        self.store = store if isinstance(store, HostStore) else HostStore(Path(store))
        self.bridge_command = tuple(bridge_command or DEFAULT_BRIDGE_COMMAND)
        self.credentials = Credentials()
        self.channel = BridgeChannel(self.credentials, self)
        self._bindings: dict[str, Binding] = {}
        self._tg: anyio.abc.TaskGroup | None = None

    async def __aenter__(self) -> Host:
        tg = anyio.create_task_group()
        await tg.__aenter__()
        try:
            await tg.start(self.channel.serve)
        except BaseException:
            tg.cancel_scope.cancel()
            await tg.__aexit__(None, None, None)
            raise
        self._tg = tg
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for binding in list(self._bindings.values()):
            self._end(binding, "the host closed")
        if self._tg is not None:
            tg, self._tg = self._tg, None
            tg.cancel_scope.cancel()
            await tg.__aexit__(None, None, None)

    # ------------------------------------------------------------ sessions

    def new_session(
        self,
        executor: str,
        cwd: str,
        *,
        profile: str | None = None,
        session_id: str | None = None,
    ) -> SessionRecord:
        """Create and save a host session run by ``executor``.

        Raises:
            ConfigError: unknown executor or profile.
            InvalidArgument: the session id exists or is unsafe, or ``cwd``
                is not absolute.
        """
        self.config.executor(executor)
        self._check_profile(profile)
        if not os.path.isabs(cwd):
            raise InvalidArgument(f"the working directory must be absolute: {cwd!r}")
        sid = session_id or f"sess-{secrets.token_hex(8)}"
        if self.store.exists(sid):
            raise InvalidArgument(f"session {sid} already exists")
        record = SessionRecord(session_id=sid, executor=executor, cwd=cwd, profile=profile)
        self.store.save(record)
        return record

    def session(self, session_id: str) -> SessionRecord:
        """The saved record of a session (raises NotFound)."""
        return self.store.load(session_id)

    def _check_profile(self, profile: str | None) -> None:
        if profile is not None and profile not in self.config.profiles:
            raise ConfigError(f"unknown profile {profile!r}")

    def set_override(self, session_id: str, key: str, value: Any) -> None:
        """Set ``execution.overrides.<key>``; ``None`` (null) restores inheritance.

        Takes effect at the next binding, except that a running binding whose
        injection now resolves to false has its bridge credential revoked at once.

        Raises:
            ConfigError: unknown setting or wrong type.
            NotFound: no such session.
        """
        value = check_setting(self.config.keys, key, value, "execution.overrides")
        record = self.store.load(session_id)
        if value is None:
            record.execution.overrides.pop(key, None)
        else:
            record.execution.overrides[key] = list(value) if isinstance(value, tuple) else value
        self.store.save(record)
        self._recheck(session_id)

    def set_profile(self, session_id: str, profile: str | None) -> None:
        """Switch the session's profile (``None``: no profile); revokes as :meth:`set_override`."""
        self._check_profile(profile)
        record = self.store.load(session_id)
        record.profile = profile
        self.store.save(record)
        self._recheck(session_id)

    def policy(
        self,
        session_id: str,
        agent: str = MAIN_AGENT,
        *,
        executor: str | None = None,
        approved_tools: Sequence[str] | None = None,
    ) -> Policy:
        """The policy in force for ``agent`` of a session, from the saved settings."""
        record = self.store.load(session_id)
        return Policy(
            self.config, self.config.executor(executor or record.executor), agent,
            profile=record.profile, overrides=record.execution.overrides,
            approved_tools=approved_tools,
        )

    def observations(self, session_id: str) -> list[Observation]:
        """The capability observations saved for a session (readable after it closed)."""
        return self.store.observations(session_id)

    @property
    def bindings(self) -> list[Binding]:
        """The running bindings."""
        return list(self._bindings.values())

    # ------------------------------------------------------------ bindings

    def _policy_for(self, binding: Binding) -> Policy:
        return self.policy(binding.session_id, binding.agent, executor=binding.executor.id,
                           approved_tools=binding.approved_tools)

    def _recheck(self, session_id: str) -> None:
        for binding in list(self._bindings.values()):
            if binding.session_id != session_id or not binding.bridged:
                continue
            decision = self._policy_for(binding).inject()
            if not decision.value:
                self._revoke(binding, f"injection turned off ({decision.source})")

    def _revoke(self, binding: Binding, reason: str) -> None:
        if self.credentials.revoke(binding.id):
            binding.revoked_reason = reason
            log.info("binding %s: bridge credential revoked: %s", binding.id, reason)

    def _end(self, binding: Binding, reason: str) -> None:
        binding.ended = True
        self._revoke(binding, reason)
        self._bindings.pop(binding.id, None)

    def _remember(self, binding: Binding) -> None:
        assert binding.harness_session_id is not None
        record = self.store.load(binding.session_id)
        record.harness_sessions[binding.agent] = binding.harness_session_id
        self.store.save(record)

    def _bridge_entry(self, token: str) -> s.McpServerStdio:
        assert self.channel.address is not None
        return s.McpServerStdio(
            name=self.config.prefix, command=self.bridge_command[0],
            args=list(self.bridge_command[1:]),
            env=[s.EnvVariable(name=ADDRESS_ENV, value=self.channel.address),
                 s.EnvVariable(name=TOKEN_ENV, value=token)],
        )

    @asynccontextmanager
    async def bind(
        self,
        session_id: str,
        *,
        agent: str = MAIN_AGENT,
        executor: str | None = None,
        approved_tools: Sequence[str] | None = None,
        on_update: UpdateHandler | None = None,
        on_permission: PermissionHandler | None = None,
        stderr: Literal["inherit", "log"] = "log",
        timeout: float | None = CALL_TIMEOUT,  # noqa: ASYNC109 (a per-call deadline)
    ) -> AsyncIterator[Binding]:
        """Run the external harness for ``agent`` of a session.

        Permission requests about the host's own tools are answered by the
        binding's policy (:mod:`wireproto.host.permissions`); the others go
        to ``on_permission``.

        Args:
            session_id: the host session.
            agent: ``"main"`` or the name of a sub-agent.
            executor: the executor (default: the session's).
            approved_tools: a sub-agent's approved native tools (an allow-list).
            on_update: passed to the ACP client.
            on_permission: answers the permission requests that are not about
                the host's tools (default: the first ``reject_*`` option).
            stderr: the harness's stderr (``"log"`` or ``"inherit"``).
            timeout: seconds each set-up call (``initialize``, opening the
                session) may take; ``None``: wait forever.

        Yields:
            the binding, its harness session opened (or waiting for
            :meth:`Binding.authenticate` when the harness requires it).

        Raises:
            LocalProtocolError: the host is not running.
            NotFound / ConfigError: unknown session or executor.
            OSError: the command could not be started.
            RpcError: the harness refused the session (other than auth required).
            TimeoutError: a set-up call was not answered within ``timeout``.
        """
        if self._tg is None:
            raise LocalProtocolError("the host is not running: use 'async with host'")
        record = self.store.load(session_id)
        policy = self.policy(session_id, agent, executor=executor, approved_tools=approved_tools)
        for old in [b for b in self._bindings.values()
                    if b.session_id == session_id and b.agent == agent]:
            self._end(old, "the binding was replaced")
        self.store.clear_observations(session_id, agent)
        caller = Caller(f"bind-{secrets.token_hex(8)}", session_id, agent)
        decision = policy.inject()
        servers = [self._bridge_entry(self.credentials.mint(caller))] if decision.value else []
        binding = Binding(caller, policy.executor, record.cwd, decision, servers, self.store,
                          approved_tools, on_open=self._remember)
        self._bindings[binding.id] = binding
        log.info("binding %s: %s for session %s, agent %s: %s", binding.id, policy.executor.id,
                 session_id, agent, binding.bridge_reason)
        decider = PermissionDecider(self.config.prefix, lambda name: self._permits(binding, name),
                                    on_permission, f"binding {binding.id}")
        client = None
        try:
            spec = policy.executor
            async with connect_acp(
                spec.command, env=spec.env, cwd=record.cwd, stderr=stderr,
                on_update=on_update, on_permission=decider, initialize=False,
                redact=_secrets(binding, spec), shutdown_timeout=spec.shutdown_grace,
            ) as client:
                await client.initialize(timeout=timeout)
                await binding._start(client, record.harness_sessions.get(agent), timeout)
                yield binding
        finally:
            self._end(binding, "the binding ended")
            process = client.process if client is not None else None
            if process is not None and process.ended_by is not None:
                log.info("binding %s: harness (pid %d) ended by %s, status %s", binding.id,
                         process.pid, process.ended_by, process.returncode)

    def _permits(self, binding: Binding, vendor: str) -> bool | None:
        """Whether ``binding`` may use the host tool ``vendor`` now (``None``: not ours)."""
        policy = self._policy_for(binding)
        native = policy.native_name(vendor)
        tool = self.tools.get(native) if native is not None else None
        if tool is None:
            return None
        usable = binding.bridged and not binding.ended and binding.revoked_reason is None
        return usable and policy.check(tool).allowed

    # ------------------------------------------------- the bridge's gateway

    def _binding_for(self, caller: Caller) -> Binding:
        binding = self._bindings.get(caller.binding_id)
        if binding is None or binding.ended or binding.caller != caller:
            self.credentials.revoke(caller.binding_id)
            raise RpcError(CREDENTIAL_INVALID, "the bridge credential was revoked or is not valid")
        return binding

    async def list_tools(self, caller: Caller) -> list[m.Tool]:
        """Every native tool ``caller``'s binding may use now, under its vendor name.

        Raises:
            RpcError: :data:`~wireproto.host.channel.CREDENTIAL_INVALID`.
        """
        policy = self._policy_for(self._binding_for(caller))
        return [
            m.Tool(name=policy.vendor_name(t.name), description=t.description,
                   input_schema=dict(t.input_schema))
            for t in self.tools.values() if policy.check(t).allowed
        ]

    async def call_tool(
        self, caller: Caller, name: str, arguments: dict[str, Any]
    ) -> m.CallToolResult:
        """Run the tool with vendor name ``name`` for ``caller`` after re-checking it.

        Raises:
            RpcError: invalid credential, unknown tool or a tool the binding
                may not use (``-32602`` with the reason), bad arguments.
        """
        policy = self._policy_for(self._binding_for(caller))
        native = policy.native_name(name)
        tool = self.tools.get(native) if native is not None else None
        if tool is None:
            raise RpcError(ErrorCode.INVALID_PARAMS, f"Unknown tool: {name}")
        verdict = policy.check(tool)
        if not verdict.allowed:
            log.info("binding %s: refused %s: %s", caller.binding_id, name, verdict.reason)
            raise RpcError(ErrorCode.INVALID_PARAMS,
                           f"Tool {name} is not allowed: {verdict.reason}")
        _check_arguments(name, tool, arguments)
        try:
            result = await tool.handler(arguments, caller)
        except InvalidArgument as exc:
            raise RpcError(ErrorCode.INVALID_PARAMS, exc.message) from exc
        except AgentError as exc:
            return m.text_result(exc.message, is_error=True)
        except Exception:
            log.exception("native tool %s failed", tool.name)
            return m.text_result(f"tool {name} failed", is_error=True)
        return m.text_result(result) if isinstance(result, str) else result


def _check_arguments(name: str, tool: NativeTool, arguments: dict[str, Any]) -> None:
    """Refuse arguments that do not fit the tool's ``input_schema``, naming the field.

    Raises:
        RpcError: ``-32602``; ``data`` holds the field's JSON path and the reason.
    """
    try:
        validator = jsonschema.validators.validator_for(tool.input_schema)(tool.input_schema)
        error = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
    except jsonschema.SchemaError as exc:
        log.error("native tool %s has an invalid input_schema: %s", tool.name, exc.message)
        raise RpcError(ErrorCode.INTERNAL_ERROR, f"tool {name} is misconfigured") from exc
    if error is None:
        return
    field = error.json_path
    where = f"{field.removeprefix('$.')}: " if field != "$" else ""
    raise RpcError(ErrorCode.INVALID_PARAMS,
                   f"Invalid arguments for {name}: {where}{error.message}",
                   {"path": field, "reason": error.message})


SECRET_NAME = re.compile(r"token|key|secret|password|passwd|credential", re.IGNORECASE)
"""Environment variable names whose values are secrets."""

SECRET_MIN_LENGTH = 6
"""Shorter values are never masked (``1`` or ``true`` would garble every line)."""


def _secrets(binding: Binding, executor: ExecutorConfig) -> list[str]:
    """What a harness's logged stderr must never show: the bridge credential
    it was given, and the values of its environment (ours and the
    executor's) whose names look secret or that the config marks secret.
    Other values (``HOME``, paths) stay readable."""
    found = [v.value for server in binding.mcp_servers for v in server.env]
    env = {**os.environ, **executor.env}
    marked = set(executor.secret_env)
    found += [value for name, value in env.items()
              if (name in marked or SECRET_NAME.search(name)) and len(value) >= SECRET_MIN_LENGTH]
    return found
