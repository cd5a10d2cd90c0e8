"""Cancellation: ``session/cancel`` and ``$/cancel_request`` in both directions.

Protocol rules: protocol-acp.md#stop-reasons, protocol-acp.md#cancellation,
protocol-acp.md#ordering, protocol-acp.md#cancel-request. The conformance checker of ``RawAcp``
fails the test if any update of a turn arrives after the turn's response.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from wireproto.agent.demo import DemoAgent
from wireproto.agent.events import StopReason
from wireproto.agent.turn import Turn

from ..conftest import FULL_CAPS, OpenAcp, chunk_text

pytestmark = pytest.mark.anyio


def is_tick(sid: str, n: int | None = None) -> Any:
    def match(m: Any) -> bool:
        if chunk_text(m) is None or m["params"]["sessionId"] != sid:
            return False
        text = chunk_text(m) or ""
        return text.startswith("tick") if n is None else text == f"tick {n}"

    return match


def prompt_params(sid: str, text: str) -> dict[str, Any]:
    return {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}


async def _session(client: Any, workdir: Path, caps: dict[str, Any] | None = None) -> str:
    await client.initialize(caps)
    return str((await client.new_session(str(workdir)))["sessionId"])


async def test_cancel_answers_cancelled_and_nothing_follows(acp: OpenAcp, workdir: Path) -> None:
    async with acp() as client:
        sid = await _session(client, workdir)
        rid = await client.request("session/prompt", prompt_params(sid, "/slow 1000"))
        await client.wait_for(is_tick(sid, 2))
        await client.notify("session/cancel", {"sessionId": sid})
        response = await client.response(rid)
        _, after = await client.prompt(sid, "next")
    assert response["result"] == {"stopReason": "cancelled"}
    assert "".join(u["content"]["text"] for u in after) == "You said: next"


async def test_cancel_during_a_permission_request(acp: OpenAcp, workdir: Path) -> None:
    async with acp() as client:
        sid = await _session(client, workdir)
        rid = await client.request("session/prompt", prompt_params(sid, "/write f.txt data"))
        asked = await client.agent_request("session/request_permission")
        await client.notify("session/cancel", {"sessionId": sid})
        cancel = await client.wait_for(lambda m: m.get("method") == "$/cancel_request")
        response = await client.response(rid)
        await client.answer(asked, {"outcome": {"outcome": "cancelled"}})  # late: dropped
        _, after = await client.prompt(sid, "still here")
    assert cancel["params"] == {"requestId": asked["id"]}
    assert client.index(cancel) < client.index(response)
    assert response["result"] == {"stopReason": "cancelled"}
    calls = [m["params"]["update"] for m in client.log[: client.index(response)]
             if m.get("method") == "session/update"
             and m["params"]["update"]["sessionUpdate"].startswith("tool_call")]
    assert calls[-1]["sessionUpdate"] == "tool_call_update"
    assert calls[-1]["status"] == "failed"  # no tool call is left pending
    assert not (workdir / "f.txt").exists()
    assert "".join(u["content"]["text"] for u in after) == "You said: still here"


async def test_cancel_during_a_client_file_read(acp: OpenAcp, workdir: Path) -> None:
    async with acp() as client:
        sid = await _session(client, workdir, FULL_CAPS)
        rid = await client.request("session/prompt", prompt_params(sid, "/read big.txt"))
        read = await client.agent_request("fs/read_text_file")
        await client.notify("session/cancel", {"sessionId": sid})
        cancel = await client.wait_for(lambda m: m.get("method") == "$/cancel_request")
        await client.answer(read, error=(-32800, "Request cancelled"))
        response = await client.response(rid)
    assert cancel["params"] == {"requestId": read["id"]}
    assert response["result"] == {"stopReason": "cancelled"}


async def test_cancelling_one_session_leaves_the_other_running(
    acp: OpenAcp, workdir: Path
) -> None:
    async with acp() as client:
        await client.initialize()
        first = (await client.new_session(str(workdir)))["sessionId"]
        second = (await client.new_session(str(workdir)))["sessionId"]
        rid1 = await client.request("session/prompt", prompt_params(first, "/slow 1000"))
        rid2 = await client.request("session/prompt", prompt_params(second, "/slow 6"))
        await client.wait_for(is_tick(first, 1))
        await client.wait_for(is_tick(second, 1))
        await client.notify("session/cancel", {"sessionId": first})
        one = await client.response(rid1)
        two = await client.response(rid2)
    assert one["result"] == {"stopReason": "cancelled"}
    assert two["result"] == {"stopReason": "end_turn"}
    ticks = [m for m in client.log if is_tick(second)(m)]
    assert [m["params"]["update"]["content"]["text"] for m in ticks] == [
        f"tick {n}" for n in range(1, 7)
    ]
    assert client.index(ticks[-1]) > client.index(one)  # it kept running


async def test_cancel_request_for_the_prompt_itself(acp: OpenAcp, workdir: Path) -> None:
    async with acp() as client:
        sid = await _session(client, workdir)
        rid = await client.request("session/prompt", prompt_params(sid, "/slow 1000"))
        await client.wait_for(is_tick(sid, 1))
        await client.notify("$/cancel_request", {"requestId": rid})
        response = await client.response(rid)
        _, after = await client.prompt(sid, "again")
    assert response["error"]["code"] == -32800
    assert "".join(u["content"]["text"] for u in after) == "You said: again"


class Shielded(DemoAgent):
    """Works under a shield (as a proxy forwarding to its backend does): only
    ``Turn.wait_cancelled`` tells it to stop; it then says so and returns."""

    async def prompt(self, turn: Turn) -> StopReason:
        with anyio.CancelScope(shield=True):
            await turn.say("working")
            await turn.wait_cancelled()
            await turn.say("stopped")
        return StopReason.CANCELLED


async def test_cancel_request_reaches_an_agent_that_shields_itself(
    acp: OpenAcp, workdir: Path
) -> None:
    async with acp(Shielded()) as client:
        sid = await _session(client, workdir)
        rid = await client.request("session/prompt", prompt_params(sid, "go"))
        await client.wait_for(lambda m: chunk_text(m) == "working")
        await client.notify("$/cancel_request", {"requestId": rid})
        response = await client.response(rid)
        stopped = [m for m in client.log if chunk_text(m) == "stopped"]
    assert response["error"]["code"] == -32800
    assert len(stopped) == 1 and client.index(stopped[0]) < client.index(response)


async def test_cancel_request_with_a_string_id_of_an_integer_request(
    acp: OpenAcp, workdir: Path
) -> None:
    async with acp() as client:
        sid = await _session(client, workdir)
        rid = await client.request("session/prompt", prompt_params(sid, "/slow 4"))
        await client.notify("$/cancel_request", {"requestId": str(rid)})  # another id
        response = await client.response(rid)
    assert response["result"] == {"stopReason": "end_turn"}


async def test_cancel_without_a_turn_is_a_no_op(acp: OpenAcp, workdir: Path) -> None:
    async with acp() as client:
        sid = await _session(client, workdir)
        await client.notify("session/cancel", {"sessionId": sid})
        await client.notify("session/cancel", {"sessionId": "sess_unknown"})
        await client.notify("session/cancel", {"bad": "params"})
        await client.nothing_before()
        _, turn = await client.prompt(sid, "fine")
    assert "".join(u["content"]["text"] for u in turn) == "You said: fine"


async def test_cancel_from_another_connection_does_nothing(
    acp: OpenAcp, workdir: Path
) -> None:
    from wireproto.agent.demo import DemoAgent
    from wireproto.agent.runtime import Runtime

    runtime = Runtime(DemoAgent())
    async with acp(runtime) as owner, acp(runtime) as other:
        sid = await _session(owner, workdir)
        await other.initialize()
        rid = await owner.request("session/prompt", prompt_params(sid, "/slow 5"))
        await owner.wait_for(is_tick(sid, 1))
        await other.notify("session/cancel", {"sessionId": sid})
        await other.nothing_before()
        response = await owner.response(rid)
    assert response["result"] == {"stopReason": "end_turn"}
