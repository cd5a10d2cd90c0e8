"""wireproto server for the peer benchmark: Peer + Router over stdio or WebSocket.

Serves ``session/set_mode`` (answers ``{}``) and ``session/prompt`` (whose
text is a number N: streams N ``agent_message_chunk`` ``session/update``
notifications with ``peer.notify``, then answers ``end_turn``). Params are
decoded into the generated ACP Structs by routes declared the way the ACP
adapters declare theirs (:func:`acp_route`: msgspec with the ACP ``dec_hook``
first, ``wireproto.adapters.acp.codec.decode`` for what it rejects, so the
codec may decode them together with the envelope), results encoded from the
Structs. ``serve`` is also used in-process for the memory transport.

Usage: ``peer_wireproto_child.py [--websocket]`` (with ``--websocket`` it
prints the URL it listens on as its first stdout line).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import anyio
import anyio.abc
import msgspec
from _messages import CHUNK_TEXT

from wireproto.adapters.acp import codec as acp_codec
from wireproto.adapters.acp.schema import (
    AgentMessageChunk,
    PromptRequest,
    PromptResponse,
    SessionNotification,
    SetSessionModeRequest,
    SetSessionModeResponse,
    TextContent,
)
from wireproto.jsonrpc.codec import ACP_DIALECT
from wireproto.rpc.peer import Peer
from wireproto.rpc.router import Router

PEER_OPTIONS: dict[str, Any] = {"dialect": ACP_DIALECT, "cancel_method": "$/cancel_request"}


def acp_decoder(type_: Any) -> Callable[[msgspec.Raw], Any]:
    """The lenient ACP decoder for ``type_`` (what the strict msgspec decoder rejects)."""

    def decode(raw: msgspec.Raw) -> Any:
        return acp_codec.decode(raw, type_)

    return decode


def acp_route(type_: Any) -> dict[str, Any]:
    """``Router.add`` keywords declaring params of ``type_`` as the ACP adapters do."""
    return {"params_type": type_, "dec_hook": acp_codec.dec_hook, "lenient": acp_decoder(type_)}


async def serve(stream: anyio.abc.ObjectStream[bytes]) -> None:
    """Serve one connection until the other side closes it."""
    router = Router()
    peer = Peer(stream, router, name="bench-server", **PEER_OPTIONS)

    async def set_mode(params: SetSessionModeRequest) -> SetSessionModeResponse:
        return SetSessionModeResponse()

    async def prompt(params: PromptRequest) -> PromptResponse:
        count = int(params.prompt[0].text)  # type: ignore[union-attr]
        notify = peer.notify
        for _ in range(count):
            update = AgentMessageChunk(content=TextContent(text=CHUNK_TEXT))
            await notify("session/update",
                         SessionNotification(session_id=params.session_id, update=update))
        return PromptResponse(stop_reason="end_turn")

    router.add("session/set_mode", set_mode, **acp_route(SetSessionModeRequest))
    router.add("session/prompt", prompt, **acp_route(PromptRequest))
    async with peer:
        await peer.wait_closed()


async def main() -> None:
    if "--websocket" in sys.argv:
        from wireproto.transports.websocket import serve_websocket

        done = anyio.Event()

        async def handler(stream: Any, request: Any) -> None:
            await serve(stream)
            done.set()

        async with serve_websocket(handler) as server:
            print(server.url, flush=True)
            await done.wait()
    else:
        from wireproto.transports.stdio import open_stdio

        async with open_stdio() as stream:
            await serve(stream)


if __name__ == "__main__":
    anyio.run(main, backend="trio" if "--trio" in sys.argv else "asyncio")
