"""The bidirectional JSON-RPC peer and its method table.

A :class:`Peer` runs one connection: it sends requests and notifications,
answers the other side's requests through a :class:`Router`, correlates ids,
cancels, and applies backpressure. Both sides of a connection are the same
class: either may send requests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wireproto._lazy import attach

if TYPE_CHECKING:
    from .peer import Peer, PeerStats, SupportsSendMany
    from .router import Decode, Handler, Reply, Route, Router

__all__ = [
    "Decode",
    "Handler",
    "Peer",
    "PeerStats",
    "Reply",
    "Route",
    "Router",
    "SupportsSendMany",
]

__getattr__, __dir__ = attach(
    __name__,
    {
        "Peer": ".peer",
        "PeerStats": ".peer",
        "SupportsSendMany": ".peer",
        "Decode": ".router",
        "Handler": ".router",
        "Reply": ".router",
        "Route": ".router",
        "Router": ".router",
    },
)
