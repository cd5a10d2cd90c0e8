"""The far end of the peer-over-transport suites.

Imported by the tests (served in-process over memory and websocket) and run as
a script (``python peer_app.py BACKEND``) to serve over :func:`open_stdio`.

Requests served: ``add`` {a, b}; ``call_back`` {x} (asks the caller's
``double`` and adds one); ``notify_me`` {count} (sends ``tick`` {i}
notifications, then answers); ``recorded`` {count} (waits until that many
``record`` notifications arrived and answers with them); ``hang`` (notifies
``hang/started``, waits forever; notifies ``hang/cancelled`` when cancelled);
``die`` (the process exits at once, in-process the stream closes);
``close_output`` (finishes sending but keeps running and reading).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from wireproto.rpc.peer import Peer
from wireproto.rpc.router import Router

CANCEL = "$/cancel_request"


def build_router(
    peer: Callable[[], Peer],
    *,
    die: Callable[[], Awaitable[None]],
    close_output: Callable[[], Awaitable[None]],
) -> Router:
    """The method table; ``peer()`` returns the serving peer once it runs."""
    router = Router()
    records: list[int] = []
    record_added = anyio.Event()

    @router.request("add")
    async def add(p: dict[str, int]) -> int:
        return p["a"] + p["b"]

    @router.request("call_back")
    async def call_back(p: dict[str, int]) -> int:
        doubled: int = await peer().request("double", {"x": p["x"]}, result_type=int)
        return doubled + 1

    @router.request("notify_me")
    async def notify_me(p: dict[str, int]) -> str:
        for i in range(p["count"]):
            await peer().notify("tick", {"i": i})
        return "done"

    @router.request("echo")
    async def echo(p: Any) -> Any:
        return p

    @router.notification("record")
    async def record(p: dict[str, int]) -> None:
        nonlocal record_added
        records.append(p["i"])
        record_added.set()
        record_added = anyio.Event()

    @router.request("recorded")
    async def recorded(p: dict[str, int]) -> list[int]:
        while len(records) < p["count"]:
            await record_added.wait()
        return records

    @router.request("hang")
    async def hang(p: Any) -> None:
        await peer().notify("hang/started")
        try:
            await anyio.sleep_forever()
        finally:
            with anyio.CancelScope(shield=True):
                await peer().notify("hang/cancelled")

    @router.request("die")
    async def die_now(p: Any) -> None:
        await die()

    @router.request("close_output")
    async def close_output_now(p: Any) -> None:
        await close_output()
        await anyio.sleep_forever()

    return router


async def serve(stream: Any, *, die: Callable[[], Awaitable[None]] | None = None) -> None:
    """Serve the router on ``stream`` until the other side finishes."""

    async def close_stream() -> None:
        await stream.aclose()

    serving: list[Peer] = []
    router = build_router(
        lambda: serving[0], die=die or close_stream, close_output=stream.send_eof
    )
    async with Peer(stream, router, cancel_method=CANCEL, name="far") as peer:
        serving.append(peer)
        await peer.wait_closed()


async def _main() -> None:
    from wireproto.transports.stdio import open_stdio

    async def exit_now() -> None:
        os._exit(3)

    async with open_stdio() as stream:
        await serve(stream, die=exit_now)


if __name__ == "__main__":
    anyio.run(_main, backend=sys.argv[1])
