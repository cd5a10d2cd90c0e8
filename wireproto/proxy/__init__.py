"""The proxy: serve any agent over any protocol.

* :func:`~wireproto.proxy.relay.relay`: the transparent relay (same protocol
  on both sides), with observers seeing every message; the base of
  recording and inspection.
* :func:`~wireproto.proxy.probe.probe_protocol`: tell an ACP agent from a
  Wire one.

See docs/proxy.md.
"""

from wireproto.proxy.probe import ProbeError, probe_protocol
from wireproto.proxy.relay import Direction, Observer, RelayedMessage, relay

__all__ = [
    "Direction",
    "Observer",
    "ProbeError",
    "RelayedMessage",
    "probe_protocol",
    "relay",
]
