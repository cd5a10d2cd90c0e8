"""The exception tree of ``wireproto.errors``: the drawn tree is the real one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from wireproto import errors
from wireproto.errors import (
    ConnectionClosed,
    InvalidMessage,
    InvalidVersion,
    LocalProtocolError,
    MessageTooLarge,
    RemoteProtocolError,
    RequestCancelled,
    RpcError,
    WireprotoError,
)
from wireproto.jsonrpc.messages import ErrorCode


def drawn_tree() -> dict[str, str]:
    """Class name -> parent name, as the module docstring draws them."""
    assert errors.__doc__ is not None
    parents: dict[str, str] = {}
    stack: list[tuple[int, str]] = [(-1, "WireprotoError")]
    for line in errors.__doc__.splitlines():
        match = re.search(r"[├└]── ([A-Z]\w+)", line)
        if match is None:
            continue
        depth = match.start()
        while stack[-1][0] >= depth:
            stack.pop()
        parents[match.group(1)] = stack[-1][1]
        stack.append((depth, match.group(1)))
    return parents


def test_the_docstring_draws_every_exception_with_its_real_parent() -> None:
    drawn = drawn_tree()
    classes = {
        name: obj
        for name, obj in vars(errors).items()
        if isinstance(obj, type) and issubclass(obj, WireprotoError) and obj is not WireprotoError
    }
    assert set(drawn) == set(classes) == set(errors.__all__) - {"WireprotoError"}
    for name, parent in drawn.items():
        assert classes[name].__bases__[0].__name__ == parent, name


def test_blame_is_built_into_the_tree() -> None:
    assert issubclass(InvalidMessage, RemoteProtocolError)
    assert issubclass(MessageTooLarge, RemoteProtocolError)
    assert not issubclass(LocalProtocolError, RemoteProtocolError)
    assert issubclass(InvalidVersion, ValueError)
    for cls in (ConnectionClosed, RpcError, LocalProtocolError, RemoteProtocolError):
        assert issubclass(cls, WireprotoError)


def test_rpc_errors_carry_the_json_rpc_error_object() -> None:
    err = RpcError(-32002, "Resource not found", {"uri": "x"})
    assert (err.code, err.message, err.data) == (-32002, "Resource not found", {"uri": "x"})
    assert repr(err) == "RpcError(-32002, 'Resource not found', {'uri': 'x'})"
    cancelled = RequestCancelled()
    assert isinstance(cancelled, RpcError)
    assert (cancelled.code, cancelled.message, cancelled.data) == (
        ErrorCode.REQUEST_CANCELLED, "Request cancelled", None
    )


def test_invalid_message_carries_its_answer() -> None:
    exc = InvalidMessage(-32600, "Invalid request", id="7", reply=False)
    assert (exc.code, exc.message, exc.data, exc.id, exc.reply) == (
        -32600, "Invalid request", None, "7", False
    )
    with pytest.raises(RemoteProtocolError):
        raise exc
    assert MessageTooLarge(64).max_bytes == 64


def test_error_codes_are_the_standard_ones() -> None:
    assert {code.name: int(code) for code in ErrorCode} == {
        "PARSE_ERROR": -32700,
        "INVALID_REQUEST": -32600,
        "METHOD_NOT_FOUND": -32601,
        "INVALID_PARAMS": -32602,
        "INTERNAL_ERROR": -32603,
        "REQUEST_CANCELLED": -32800,
    }


def test_rpc_error_text_shows_the_peers_data_truncated() -> None:
    assert str(RpcError(-32603, "Internal error")) == "Internal error (-32603)"
    detailed = RpcError(-32603, "Internal error", {"message": "disk full", "code": 7})
    assert str(detailed) == "Internal error (-32603): disk full"
    assert str(RpcError(-32602, "Invalid params", {"details": "path: not a string"})).endswith(
        ": path: not a string")
    assert str(RpcError(-32000, "Failed", {"n": 1})) == 'Failed (-32000): {"n": 1}'
    repeated = RpcError(-32602, "Invalid params: missing `protocolVersion`",
                        "missing `protocolVersion`")  # the message already ends with its data
    assert str(repeated) == "Invalid params: missing `protocolVersion` (-32602)"
    long = str(RpcError(-32603, "Internal error", "x" * 5000))
    assert long.endswith("...") and len(long) < errors.DATA_TEXT_LIMIT + 40
    assert repr(detailed).startswith("RpcError(-32603")


# --------------------------------------------------------------------------- misuse


@pytest.mark.anyio
async def test_misuse_raises_local_protocol_error_everywhere() -> None:
    """Using a client, peer or server before it runs: one exception in every module."""
    from wireproto.adapters.acp import ClientConnection
    from wireproto.adapters.wire import WireClient, WireServer
    from wireproto.agent import DemoAgent, Runtime
    from wireproto.rpc import Peer
    from wireproto.transports import memory_pair

    a, b = memory_pair()
    with pytest.raises(LocalProtocolError, match="async with"):
        await Peer(a).request("ping")
    with pytest.raises(LocalProtocolError, match="async with"):
        ClientConnection(a).peer  # noqa: B018
    with pytest.raises(LocalProtocolError, match="async with"):
        WireClient(a).peer  # noqa: B018
    with pytest.raises(LocalProtocolError, match="serve"):
        WireServer(Runtime(DemoAgent())).session  # noqa: B018
    await a.aclose()
    async with WireClient(b, event_buffer=0) as client:
        with pytest.raises(LocalProtocolError, match="event_buffer"):
            client.events()


@pytest.mark.anyio
async def test_common_slips_say_what_to_write_instead() -> None:
    """A class for an agent, one string for a command: refused at once, naming the fix."""
    from wireproto.adapters.acp import connect_acp, serve_acp
    from wireproto.adapters.wire import connect_wire
    from wireproto.agent import DemoAgent, Runtime
    from wireproto.transports import memory_pair, open_subprocess

    with pytest.raises(TypeError, match=r"the class DemoAgent: pass an instance, DemoAgent\(\)"):
        Runtime(DemoAgent)  # type: ignore[arg-type]
    ours, theirs = memory_pair()
    with pytest.raises(TypeError, match="the class DemoAgent"):
        await serve_acp(DemoAgent, theirs)  # type: ignore[arg-type]
    await ours.aclose()
    await theirs.aclose()
    # (a string was spawned character by character: "w" is a real program on Linux)
    wanted = r"not one string: \['wireproto', 'acp'\] rather than 'wireproto acp'"
    with pytest.raises(TypeError, match=wanted):
        async with open_subprocess("wireproto acp"):
            pass
    with pytest.raises(TypeError, match=wanted):
        async with connect_acp("wireproto acp"):
            pass
    with pytest.raises(TypeError, match="not one string"):
        async with connect_wire("wireproto wire"):
            pass


@pytest.mark.anyio
async def test_a_program_not_on_path_says_how_to_name_it(tmp_path: Path) -> None:
    from wireproto.transports import open_subprocess

    with pytest.raises(FileNotFoundError, match=r"a program looked up on PATH; give its full "
                       r"path, or \[sys.executable, '-m', MODULE\]") as info:
        async with open_subprocess(["wireproto-no-such-program", "acp"]):
            pass
    assert info.value.filename == "wireproto-no-such-program"
    with pytest.raises(FileNotFoundError) as info:  # a missing directory is not about PATH
        async with open_subprocess(["true"], cwd=tmp_path / "gone"):
            pass
    assert "PATH" not in str(info.value)
