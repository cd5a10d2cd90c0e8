"""wireproto: a fast asyncio protocol framework for AI agents.

msgspec JSON-RPC 2.0, a bidirectional RPC peer, pluggable transports, and
adapters for Kimi CLI's Wire protocol and Zed's Agent Client Protocol.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
