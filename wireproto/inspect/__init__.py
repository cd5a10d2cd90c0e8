"""A browser inspector for agent traffic (``wireproto inspect``).

The pieces, each usable alone:

- :class:`~wireproto.inspect.record.Recorder`: every message, numbered and
  timed (``send``: client -> agent, ``recv``: agent -> client), and
  :func:`~wireproto.inspect.record.load_trace` for ``--trace`` files;
- :func:`~wireproto.inspect.tap.open_tap`: the recorded connection to the agent
  (the proxy's relay, observed by the recorder), used through a
  :class:`~wireproto.inspect.tap.Tap`;
- :func:`~wireproto.inspect.handshake.initialize`: the inspector's own
  ``initialize`` (ACP, Wire, or told apart by the answer);
- :class:`~wireproto.inspect.server.Inspector` and
  :func:`~wireproto.inspect.server.serve_inspector`: the page and its
  websocket on one local port, behind a token;
- :func:`~wireproto.inspect.decode.describe`: what a message means to the
  library, with the codec's validation errors.

The page itself is plain HTML, CSS and JavaScript in ``static/`` (no build
step, nothing loaded from elsewhere). See docs/inspector.md.
"""

from wireproto.inspect.record import Record, Recorder, load_trace
from wireproto.inspect.server import Inspector, serve_inspector
from wireproto.inspect.tap import Tap, open_tap

__all__ = ["Inspector", "Record", "Recorder", "Tap", "load_trace", "open_tap", "serve_inspector"]
