"""The host's TOML configuration: prefix, executors, engine defaults and profiles.

Theory of operation
-------------------
One file, parsed with :mod:`tomllib` (``tomli`` on Python 3.10)::

    prefix = "kiki"                       # the host's short name
    no_stdio_mcp = ["openclaw", "pi"]     # executors that cannot take a stdio MCP server

    [executors.claude]                    # an external agent command
    command = ["claude-agent-acp"]
    env = { CLAUDE_CONFIG_DIR = "/srv/claude", PROXY_AUTH = "..." }
    secret_env = ["PROXY_AUTH"]           # masked in its logged stderr
    shutdown_grace = 1.0                  # seconds to exit after stdin closes

    [executors.wp]                        # a harness built on wireproto must
    command = ["wireproto", "acp", "--allow-client-stdio-mcp"]   # accept stdio MCP

    [agent_executor_overrides.claude.defaults]   # the engine default
    inject_kiki_mcp = true

    [profiles.review]                     # a named set of settings
    inject_kiki_mcp = false
    kiki_context = []
    allow_kiki_subagents = false
    allowed_tools = ["kiki_read", "grep"]
    denied_tools = ["write"]

The **settings** a layer (engine default, profile, session override) may
hold are :meth:`SettingKeys.types` (name -> value type); their names
depend on the prefix.
Unknown keys in a settings table are an error (a typo must not silently
open or close a tool group). ``no_stdio_mcp`` defaults to the executors the
reference product names (OpenClaw and Pi). The vendor's own model settings,
login and permissions stay in the harness's own configuration: the host never
writes them, and the bridge credential is never copied into them.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover (Python 3.10)
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

__all__ = [
    "DEFAULT_NO_STDIO_MCP",
    "DEFAULT_SHUTDOWN_GRACE",
    "ConfigError",
    "ExecutorConfig",
    "HostConfig",
    "SettingKeys",
    "check_setting",
    "load_config",
    "parse_config",
]

DEFAULT_SHUTDOWN_GRACE = 5.0
"""Seconds a harness gets to exit after its stdin closed, unless its executor says otherwise."""

DEFAULT_NO_STDIO_MCP: tuple[str, ...] = ("openclaw", "pi")
"""Executor ids that cannot take a stdio MCP server unless the config says otherwise."""

_PREFIX = re.compile(r"^[a-z][a-z0-9]*$")


class ConfigError(ValueError):
    """The host configuration (or a setting value) is invalid; the message says where."""


@dataclasses.dataclass(frozen=True)
class SettingKeys:
    """The names of the settings for one prefix (``kiki`` -> ``inject_kiki_mcp`` ...)."""

    prefix: str

    @property
    def inject(self) -> str:
        """Whether the binding gets the tool bridge."""
        return f"inject_{self.prefix}_mcp"

    @property
    def context(self) -> str:
        """The context tools opened (either name); ``[]`` closes the group."""
        return f"{self.prefix}_context"

    @property
    def subagents(self) -> str:
        """Whether the delegation (``subagents``) group is open."""
        return f"allow_{self.prefix}_subagents"

    allow: str = "allowed_tools"
    deny: str = "denied_tools"

    def types(self) -> dict[str, type]:
        """Setting name -> expected value type (``list`` means a list of strings)."""
        return {self.inject: bool, self.context: list, self.subagents: bool,
                self.allow: list, self.deny: list}


def check_setting(keys: SettingKeys, key: str, value: Any, where: str) -> Any:
    """Validate one setting value (``None`` is allowed: "not set").

    Returns:
        the value (lists become tuples).

    Raises:
        ConfigError: unknown key or wrong type.
    """
    expected = keys.types().get(key)
    if expected is None:
        raise ConfigError(f"{where}: unknown setting {key!r} "
                          f"(known: {', '.join(sorted(keys.types()))})")
    if value is None:
        return None
    if expected is bool and not isinstance(value, bool):
        raise ConfigError(f"{where}: {key} must be true or false")
    if expected is list:
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where}: {key} must be a list of tool names")
        return tuple(value)
    return value


def _settings(keys: SettingKeys, table: Any, where: str) -> dict[str, Any]:
    if not isinstance(table, Mapping):
        raise ConfigError(f"{where} must be a table")
    return {k: check_setting(keys, k, v, where) for k, v in table.items()}


@dataclasses.dataclass(frozen=True)
class ExecutorConfig:
    """A configured external agent command.

    Attributes:
        id: the executor id.
        command: the program and its arguments.
        env: variables set for it on top of the host's environment.
        stdio_mcp: whether it can take a stdio MCP server (not in ``no_stdio_mcp``).
        secret_env: names of variables whose values are secrets (masked in
            its logged stderr, like every variable whose name contains
            token, key, secret, password or credential).
        shutdown_grace: seconds it gets to exit after its stdin closes (and
            again after SIGTERM) when a binding ends.
    """

    id: str
    command: tuple[str, ...]
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    stdio_mcp: bool = True
    secret_env: tuple[str, ...] = ()
    shutdown_grace: float = DEFAULT_SHUTDOWN_GRACE


@dataclasses.dataclass(frozen=True)
class HostConfig:
    """The parsed configuration.

    Attributes:
        prefix: the host's short name (tool and setting names derive from it).
        executors: executor id -> config.
        engine_defaults: executor id -> its default settings.
        profiles: profile name -> settings.
        no_stdio_mcp: executor ids that cannot take a stdio MCP server.
    """

    prefix: str
    executors: Mapping[str, ExecutorConfig] = dataclasses.field(default_factory=dict)
    engine_defaults: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    profiles: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    no_stdio_mcp: frozenset[str] = frozenset(DEFAULT_NO_STDIO_MCP)

    @property
    def keys(self) -> SettingKeys:
        """The setting names for this prefix."""
        return SettingKeys(self.prefix)

    def executor(self, executor_id: str) -> ExecutorConfig:
        """Return the executor ``executor_id``.

        Raises:
            ConfigError: no such executor.
        """
        found = self.executors.get(executor_id)
        if found is None:
            raise ConfigError(f"unknown executor {executor_id!r}")
        return found


def _executor(executor_id: str, table: Any, no_stdio: frozenset[str]) -> ExecutorConfig:
    where = f"executors.{executor_id}"
    if not isinstance(table, Mapping):
        raise ConfigError(f"{where} must be a table")
    command = table.get("command")
    if (not isinstance(command, list) or not command
            or not all(isinstance(c, str) for c in command)):
        raise ConfigError(f"{where}.command must be a non-empty list of strings")
    env = table.get("env", {})
    if not isinstance(env, Mapping) or not all(isinstance(v, str) for v in env.values()):
        raise ConfigError(f"{where}.env must be a table of strings")
    secret = table.get("secret_env", [])
    if not isinstance(secret, list) or not all(isinstance(v, str) for v in secret):
        raise ConfigError(f"{where}.secret_env must be a list of variable names")
    grace = table.get("shutdown_grace", DEFAULT_SHUTDOWN_GRACE)
    if isinstance(grace, bool) or not isinstance(grace, (int, float)) or grace < 0:
        raise ConfigError(f"{where}.shutdown_grace must be a number of seconds (0 or more)")
    unknown = set(table) - _EXECUTOR_KEYS
    if unknown:
        raise ConfigError(f"{where}: unknown key {sorted(unknown)[0]!r} "
                          f"(known: {', '.join(sorted(_EXECUTOR_KEYS))})")
    return ExecutorConfig(executor_id, tuple(command), dict(env), executor_id not in no_stdio,
                          tuple(secret), float(grace))


_EXECUTOR_KEYS = frozenset({"command", "env", "secret_env", "shutdown_grace"})
"""The keys an ``[executors.<id>]`` table may hold."""


def parse_config(data: Mapping[str, Any], *, prefix: str | None = None) -> HostConfig:
    """Build a :class:`HostConfig` from parsed TOML.

    Args:
        data: the TOML document.
        prefix: the prefix, when the host fixes it (else ``data["prefix"]``).

    Raises:
        ConfigError: anything invalid, with its place in the file.
    """
    prefix = prefix or data.get("prefix")
    if not isinstance(prefix, str) or not _PREFIX.match(prefix):
        raise ConfigError("prefix must be a short lowercase name such as 'kiki'")
    keys = SettingKeys(prefix)
    raw_no_stdio = data.get("no_stdio_mcp", list(DEFAULT_NO_STDIO_MCP))
    if not isinstance(raw_no_stdio, list) or not all(isinstance(x, str) for x in raw_no_stdio):
        raise ConfigError("no_stdio_mcp must be a list of executor ids")
    no_stdio = frozenset(raw_no_stdio)
    executors = {
        eid: _executor(eid, table, no_stdio)
        for eid, table in _table(data, "executors").items()
    }
    defaults: dict[str, Mapping[str, Any]] = {}
    for eid, table in _table(data, "agent_executor_overrides").items():
        where = f"agent_executor_overrides.{eid}"
        if not isinstance(table, Mapping):
            raise ConfigError(f"{where} must be a table")
        defaults[eid] = _settings(keys, table.get("defaults", {}), f"{where}.defaults")
    profiles = {
        name: _settings(keys, table, f"profiles.{name}")
        for name, table in _table(data, "profiles").items()
    }
    return HostConfig(prefix, executors, defaults, profiles, no_stdio)


def _table(data: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    table = data.get(name, {})
    if not isinstance(table, Mapping):
        raise ConfigError(f"{name} must be a table")
    return table


def load_config(path: str | Path, *, prefix: str | None = None) -> HostConfig:
    """Read and parse the host's TOML configuration file.

    Raises:
        OSError: the file cannot be read.
        ConfigError: invalid TOML or invalid configuration.
    """
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    return parse_config(data, prefix=prefix)
