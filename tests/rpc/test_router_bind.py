"""``Router.bind``: one method table shared by connections, each handler given its connection."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from wireproto._switches import FAST_PATHS
from wireproto.errors import LocalProtocolError
from wireproto.jsonrpc.codec import ACP_DIALECT, Call, Decoder
from wireproto.jsonrpc.messages import Request
from wireproto.rpc.router import Router
from wireproto.testing import probe_peer


class Point(msgspec.Struct):
    x: int
    y: int


class Conn:
    def __init__(self, name: str) -> None:
        self.name = name
        self.notes: list[Any] = []


async def where(conn: Conn, p: Point) -> list[Any]:
    return [conn.name, p.x + p.y]


async def note(conn: Conn, params: Any) -> None:
    conn.notes.append(params)


def table() -> Router:
    shared = Router()
    shared.add("where", where, Point, dec_hook=None, lenient=lambda raw: Point(0, 0))
    shared.add("note", note, notification=True)
    return shared


@pytest.mark.anyio
async def test_each_bound_router_passes_its_own_context() -> None:
    shared = table()
    a, b = Conn("a"), Conn("b")
    async with probe_peer(shared.bind(a)) as (_pa, probe_a), \
            probe_peer(shared.bind(b)) as (_pb, probe_b):
        await probe_a.write_json({"jsonrpc": "2.0", "id": 1, "method": "where",
                                  "params": {"x": 1, "y": 2}})
        await probe_b.write_json({"jsonrpc": "2.0", "method": "note", "params": [5]})
        await probe_b.write_json({"jsonrpc": "2.0", "id": 2, "method": "where",
                                  "params": {"x": "bad"}})  # the lenient decoder's answer
        assert (await probe_a.read_json())["result"] == ["a", 3]
        assert (await probe_b.read_json())["result"] == ["b", 0]
    assert b.notes == [[5]] and a.notes == []


def test_a_bound_router_shares_the_table_and_binds_a_route_at_first_use() -> None:
    shared = table()
    one, two = shared.bind(Conn("1")), shared.bind(Conn("2"))
    assert one.params_specs() is two.params_specs()  # built once for every connection
    assert one._routes == {}  # nothing copied up front
    route = one.get("where")
    assert route is not None and route is one.get("where")
    assert route.decode is shared.get("where").decode  # type: ignore[union-attr]
    assert one.get("missing") is None and "missing" not in one._routes
    assert "note" in one and "missing" not in one
    assert [r.method for r in two] == ["where", "note"]
    assert one.revision == shared.revision


def test_one_pass_decoding_serves_the_bound_routes() -> None:
    one = table().bind(Conn("1"))
    msg = Decoder(ACP_DIALECT, one).decode(
        b'{"jsonrpc":"2.0","id":1,"method":"where","params":{"x":1,"y":2}}'
    )
    if FAST_PATHS:  # (one pass is a fast path)
        assert isinstance(msg, Call) and msg.params == Point(1, 2)
    else:
        assert isinstance(msg, Request)
    assert one.get(msg.method) is not None


async def handler(params: Any) -> None:
    return None


def test_a_bound_table_and_a_bound_router_do_not_change() -> None:
    shared = table()
    bound = shared.bind(Conn("1"))
    with pytest.raises(LocalProtocolError):
        shared.add("later", handler)
    with pytest.raises(LocalProtocolError):
        bound.add("later", handler)
    with pytest.raises(LocalProtocolError):
        bound.bind(Conn("2"))
