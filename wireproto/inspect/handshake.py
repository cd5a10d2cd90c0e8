"""The inspector's own ``initialize``: one per agent connection, recorded like the rest.

The inspector plays the client. It opens the connection with the protocol's
``initialize`` (capabilities: questions and elicitation forms, which the page
renders; no file system and no terminal, so such requests from an agent can
only be answered by hand in the raw composer). The page sees the handshake
in the timeline and takes the agent's slash commands and capabilities from it.

``auto`` tells the protocols apart by the answer: an ACP agent answers
``protocolVersion`` (an integer), a Wire server ``protocol_version`` (a
string). The ACP form is tried first; when the agent answers with an error
or in the Wire shape, the Wire form is sent (a Wire server accepts a second
``initialize``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from wireproto import __version__
from wireproto.inspect.record import Record
from wireproto.inspect.tap import Tap

__all__ = ["PROTOCOLS", "HandshakeError", "acp_initialize", "guess_protocol", "initialize",
           "wire_initialize"]

log = logging.getLogger(__name__)

PROTOCOLS = ("acp", "wire", "auto")
"""``--agent-protocol`` values."""

CLIENT_NAME = "wireproto-inspect"


class HandshakeError(Exception):
    """The agent did not accept the inspector's ``initialize``."""


def acp_initialize() -> dict[str, Any]:
    """The params of the inspector's ACP ``initialize``."""
    return {
        "protocolVersion": 1,
        "clientCapabilities": {
            "fs": {"readTextFile": False, "writeTextFile": False},
            "terminal": False,
            "elicitation": {"form": {}},
            "session": {"configOptions": {"boolean": {}}, "notices": {}},
        },
        "clientInfo": {"name": CLIENT_NAME, "title": "wireproto inspect",
                       "version": __version__},
    }


def wire_initialize() -> dict[str, Any]:
    """The params of the inspector's Wire ``initialize``."""
    from wireproto.adapters.wire.versions import CURRENT_VERSION

    return {
        "protocol_version": CURRENT_VERSION,
        "client": {"name": CLIENT_NAME, "version": __version__},
        "capabilities": {"supports_question": True, "supports_plan_mode": False},
    }


def _shape(answer: dict[str, Any]) -> str | None:
    result = answer.get("result")
    if not isinstance(result, dict):
        return None
    if isinstance(result.get("protocolVersion"), int):
        return "acp"
    if isinstance(result.get("protocol_version"), str):
        return "wire"
    return None


def _refusal(answer: dict[str, Any]) -> str:
    error = answer.get("error")
    if isinstance(error, dict):
        return f"{error.get('message', 'error')} ({error.get('code', '?')})"
    return "an answer of unexpected shape"


async def initialize(tap: Tap, protocol: str) -> str:
    """Initialize the agent behind ``tap`` as ``protocol``; return the protocol spoken.

    Raises:
        HandshakeError: the agent refused, or answered in neither shape.
        anyio.BrokenResourceError: the agent ended first.
    """
    if protocol == "wire":
        tap.string_ids = True
        answer = await tap.request("initialize", wire_initialize())
        if _shape(answer) != "wire":
            raise HandshakeError(f"the agent refused the Wire initialize: {_refusal(answer)}")
        return "wire"
    answer = await tap.request("initialize", acp_initialize())
    shape = _shape(answer)
    if shape == "acp":
        return "acp"
    if protocol == "acp":
        raise HandshakeError(f"the agent refused the ACP initialize: {_refusal(answer)}")
    log.info("inspect: not an ACP answer to initialize; trying Wire")
    tap.string_ids = True
    answer = await tap.request("initialize", wire_initialize())
    if _shape(answer) != "wire":
        raise HandshakeError(
            "the agent answered neither the ACP nor the Wire initialize "
            f"({_refusal(answer)}); give --agent-protocol acp or wire")
    return "wire"


_ACP_HINTS = frozenset({"session/update", "session/prompt", "session/new", "session/load"})
_WIRE_HINTS = frozenset({"event", "request", "prompt"})


def guess_protocol(records: Iterable[Record]) -> str | None:
    """The protocol of a recording, told by the methods in it (``None``: unknown)."""
    for record in records:
        if not record.is_json:
            continue
        message = record.message()
        method = message.get("method") if isinstance(message, dict) else None
        if method in _ACP_HINTS:
            return "acp"
        if method in _WIRE_HINTS:
            return "wire"
    return None
