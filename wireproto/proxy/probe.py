"""``--agent-protocol auto``: find out whether a command is an ACP or a Wire agent.

The command is started once, on its own, and sent an ACP ``initialize``
with a string id. An ACP agent answers with its ``protocolVersion`` and
``agentCapabilities``; any other answer (a Wire server's result or its
refusal of the ACP parameters) means Wire. No answer within the time limit
is an error naming both handshakes. The probe process is then shut down;
the proxy starts its backends afresh.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Literal

import anyio
import msgspec

from wireproto.transports.subprocess import open_subprocess

__all__ = ["PROBE_TIMEOUT", "ProbeError", "probe_protocol"]

log = logging.getLogger(__name__)

PROBE_TIMEOUT = 20.0
"""Seconds the probed command may take to answer its first handshake."""

Protocol = Literal["acp", "wire"]

_PROBE = msgspec.json.encode({
    "jsonrpc": "2.0", "id": "wireproto-probe", "method": "initialize",
    "params": {"protocolVersion": 1, "clientCapabilities": {},
               "clientInfo": {"name": "wireproto-probe", "version": "1"}},
})


class ProbeError(Exception):
    """The command answered neither handshake."""


def classify(answer: object) -> Protocol | None:
    """The protocol an answer to the probe reveals (``None``: not the probe's answer)."""
    if not isinstance(answer, dict) or answer.get("id") != "wireproto-probe":
        return None
    result = answer.get("result")
    if isinstance(result, dict) and (
        "agentCapabilities" in result or isinstance(result.get("protocolVersion"), int)
    ):
        return "acp"
    return "wire"


def _exited(name: str) -> ProbeError:
    return ProbeError(
        f"{name} exited without answering an ACP or a Wire initialize; "
        "check the command, or name its protocol with --agent-protocol"
    )


async def probe_protocol(
    cmd: Sequence[str],
    *,
    timeout: float = PROBE_TIMEOUT,  # noqa: ASYNC109 (the probe's deadline)
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
) -> Protocol:
    """Start ``cmd`` once and tell whether it speaks ACP or Wire.

    Raises:
        ProbeError: it ended or stayed silent without answering.
        OSError: it could not be started.
    """
    name = cmd[0] if cmd else "?"
    async with open_subprocess(cmd, stderr="log", env=env, cwd=cwd,
                               shutdown_timeout=2.0) as child:
        try:
            await child.send(_PROBE)
        except anyio.BrokenResourceError:  # it exited before reading
            raise _exited(name) from None
        with anyio.move_on_after(timeout):
            while True:
                try:
                    data = await child.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    raise _exited(name) from None
                try:
                    answer = msgspec.json.decode(data)
                except (msgspec.DecodeError, RecursionError):
                    log.info("probe: %s wrote a line that is not JSON (or too deep); ignored",
                             name)
                    continue
                found = classify(answer)
                if found is not None:
                    log.info("probe: %s speaks %s", name, found.upper())
                    return found
    raise ProbeError(
        f"{name} answered neither an ACP nor a Wire initialize within {timeout:g} s; "
        "name its protocol with --agent-protocol acp|wire"
    )
