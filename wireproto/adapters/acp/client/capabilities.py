"""What an ACP client advertises, and which agent methods the agent's capabilities allow."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from msgspec import UNSET

from wireproto.adapters.acp import schema as s
from wireproto.errors import LocalProtocolError

__all__ = ["GATES", "advertised", "check_roots"]


def _marker(value: object) -> bool:
    return value is not UNSET and value is not None


GATES: dict[str, Callable[[s.AgentCapabilities], bool]] = {
    "session/load": lambda c: c.load_session,
    "session/resume": lambda c: _marker(c.session_capabilities.resume),
    "session/list": lambda c: _marker(c.session_capabilities.list_),
    "session/close": lambda c: _marker(c.session_capabilities.close),
    "session/delete": lambda c: _marker(c.session_capabilities.delete),
    "logout": lambda c: _marker(c.auth.logout),
}
"""Method -> whether the agent's capabilities allow calling it."""


def advertised(
    fs: bool, terminal: bool, notices: bool, compaction: bool, boolean_options: bool
) -> s.ClientCapabilities:
    """The capabilities a client sends in ``initialize``."""
    session = s.ClientSessionCapabilities(
        notices=s.NoticeCapabilities() if notices else UNSET,
        compaction=s.CompactionCapabilities() if compaction else UNSET,
        config_options=(
            s.SessionConfigOptionsCapabilities(boolean=s.BooleanConfigOptionCapabilities())
            if boolean_options
            else UNSET
        ),
    )
    return s.ClientCapabilities(
        fs=s.FileSystemCapabilities(read_text_file=fs, write_text_file=fs),
        terminal=terminal,
        session=session if (notices or compaction or boolean_options) else UNSET,
    )


def check_roots(
    caps: s.AgentCapabilities, cwd: str, dirs: Sequence[str] | None,
    servers: Sequence[s.McpServer],
) -> tuple[str, ...]:
    """The extra directories of a new or reopened session, checked against ``caps``.

    Raises:
        ValueError: a directory that is not absolute.
        LocalProtocolError: extra directories, or an HTTP/SSE MCP server, that the
            agent did not advertise.
    """
    for path in (cwd, *(dirs or ())):
        if not path.startswith("/"):
            raise ValueError(f"session directories must be absolute: {path!r}")
    if dirs and not _marker(caps.session_capabilities.additional_directories):
        raise LocalProtocolError("the agent did not advertise additionalDirectories")
    allowed: dict[type, bool] = {s.McpServerHttp: caps.mcp_capabilities.http,
                                 s.McpServerSse: caps.mcp_capabilities.sse}
    for server in servers:
        if not allowed.get(type(server), True):
            raise LocalProtocolError(
                f"the agent does not accept {type(server).__name__} MCP servers"
            )
    return tuple(dirs or ())
