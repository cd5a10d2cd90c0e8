"""ClientCalls: the agent's requests to an ACP client, a component of the connection."""

from __future__ import annotations

import inspect

import pytest

from wireproto.adapters.acp.agent.calls import ClientCalls
from wireproto.adapters.acp.agent.connection import AgentConnection
from wireproto.agent.api import ApprovalRequest, Session
from wireproto.agent.demo import DemoAgent
from wireproto.agent.runtime import Runtime
from wireproto.errors import ConnectionClosed, LocalProtocolError
from wireproto.rpc.peer import Peer

pytestmark = pytest.mark.anyio


def _no_peer() -> Peer:
    raise ConnectionClosed("not served")


async def test_requests_without_a_peer_fail_with_connection_closed() -> None:
    calls = ClientCalls(_no_peer, "test")
    session = Session(id="s1", cwd="/")
    with pytest.raises(ConnectionClosed):
        await calls.request_approval(session, ApprovalRequest(
            id="a1", tool_call_id="t1", tool="shell", action="run", description="rm -rf"))


async def test_files_need_the_declared_capability() -> None:
    calls = ClientCalls(_no_peer, "test")
    with pytest.raises(LocalProtocolError, match="cannot read files"):
        await calls.read_text_file(Session(id="s1", cwd="/"), "/etc/hosts")


def test_the_connection_owns_its_client_calls() -> None:
    connection = AgentConnection(Runtime(DemoAgent()))
    assert not isinstance(connection, ClientCalls)
    assert connection.capabilities is connection.client.capabilities
    with pytest.raises(ConnectionClosed):
        connection.client.peer  # noqa: B018 (the getter is the test)


def test_the_connection_offers_every_request_of_its_client_calls() -> None:
    """The runtime finds the optional ones (questions, URLs) with getattr: none may be missed."""
    requests = {name for name, member in inspect.getmembers(ClientCalls)
                if inspect.iscoroutinefunction(member) and not name.startswith("_")}
    assert {"request_approval", "ask_questions", "ask_url", "complete_url"} <= requests
    for name in requests:
        assert inspect.iscoroutinefunction(getattr(AgentConnection, name, None)), name
