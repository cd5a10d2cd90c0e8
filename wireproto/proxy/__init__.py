"""The proxy: serve any agent over any protocol (``wireproto proxy``; docs/proxy.md).

* :func:`relay_messages`: the transparent relay between a client and an agent of the
  same protocol, with observers seeing every message (:class:`RelayedMessage`);
  :class:`TraceWriter` is the observer writing the ``--trace`` format.
  :func:`relay_pipes` is the same relay between stdio and a child's pipes,
  pumped by worker threads (what ``wireproto proxy --trace`` runs on stdio).
* :class:`WireBackedAgent` / :class:`AcpBackedAgent`: neutral agents that
  forward every call to a Wire / ACP agent process; serve them with any
  adapter inside ``async with agent.running():``.
* :func:`probe_protocol`: tell an ACP agent from a Wire one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wireproto._lazy import attach

if TYPE_CHECKING:
    from .acpback import AcpBackedAgent
    from .pipes import relay_pipes
    from .probe import ProbeError, probe_protocol
    from .relay import Direction, Observer, RelayedMessage, relay_messages
    from .trace import TraceWriter
    from .wireback import WireBackedAgent

__all__ = [
    "AcpBackedAgent",
    "Direction",
    "Observer",
    "ProbeError",
    "RelayedMessage",
    "TraceWriter",
    "WireBackedAgent",
    "probe_protocol",
    "relay_messages",
    "relay_pipes",
]

__getattr__, __dir__ = attach(__name__, {
    "AcpBackedAgent": ".acpback",
    "ProbeError": ".probe",
    "probe_protocol": ".probe",
    "Direction": ".relay",
    "Observer": ".relay",
    "RelayedMessage": ".relay",
    "relay_messages": ".relay",
    "relay_pipes": ".pipes",
    "TraceWriter": ".trace",
    "WireBackedAgent": ".wireback",
})
