"""``wireproto proxy`` on the command line: auto probe, relay over stdio and websocket,
clear errors."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from websockets.sync.client import connect


def test_auto_relay_over_stdio_then_clean_exit(kit: Any) -> None:
    proxy = kit.spawn("proxy", "--serve", "wire", "--", *kit.wireproto, "wire")
    proxy.send(kit.wire_init)
    reply = proxy.recv()
    assert reply["id"] == "init" and reply["result"]["server"]["name"] == "wireproto-demo"
    proxy.close_stdin()
    assert proxy.wait() == 0
    assert "speaks WIRE" in kit.log_file("proxy", proxy.pid).read_text()


def test_relay_over_websocket_needs_the_token(kit: Any) -> None:
    server, base, token = kit.ws("proxy", "--serve", "acp", "--agent-protocol", "acp",
                                 "--ws", "0", "--", *kit.wireproto, "acp")
    with connect(f"{base}/?token={token}") as ws:
        ws.send(json.dumps(kit.acp_init))
        answer = json.loads(ws.recv(timeout=kit.limit))
        assert answer["id"] == 0 and answer["result"]["protocolVersion"] == 1
    assert kit.stop(server) == 0


def test_usage_errors_say_what_to_do(kit: Any) -> None:
    cases = [
        (("proxy", "--serve", "acp"), "give the agent command after --"),
        (("proxy", "--", "true"), "--serve acp or --serve wire"),
        (("proxy", "--serve", "acp", "--agent-protocol", "wire", "--trace", "t.jsonl", "--",
          "true"), "--trace records a relay"),
        (("proxy", "--wire", "--serve", "acp", "--", "true"), "drop --serve acp"),
        (("proxy", "--serve", "wire", "--agent-protocol", "acp", "--ws", "0", "--session", "x",
          "--", "true"), "--session cannot be combined with --ws"),
    ]
    for args, text in cases:
        proc = kit.spawn(*args, stdin=subprocess.DEVNULL)
        assert proc.wait() == 2, args  # usage errors
        errors = [line for line in proc.err.splitlines() if line.startswith("wireproto: error")]
        assert len(errors) == 1 and text in errors[0], proc.err
        assert "Traceback" not in proc.err


def test_a_missing_work_dir_is_refused_in_one_line(kit: Any, tmp_path: Any) -> None:
    missing = tmp_path / "no-such-dir"
    for args in (("--serve", "wire", "--agent-protocol", "acp"), ("--wire",)):
        proc = kit.spawn("proxy", *args, "--work-dir", str(missing), "--", *kit.wireproto,
                         "acp", stdin=subprocess.DEVNULL)
        assert proc.wait() == 1, args
        errors = [line for line in proc.err.splitlines() if line.startswith("wireproto: error")]
        assert errors == [f"wireproto: error: --work-dir {missing}: no such directory (the "
                          "session's working directory must exist)"], proc.err


def test_a_wrong_agent_protocol_names_the_option_that_fixes_it(kit: Any, tmp_path: Any) -> None:
    script = tmp_path / "prompts.txt"
    script.write_text("hello\n")
    for front, back in (("acp", "wire"), ("wire", "acp")):
        # the agent speaks the front's protocol, but the proxy is told it speaks the other one
        agent = ["sh", "-c", "exec " + " ".join([*kit.wireproto, front])]
        proc = kit.spawn("connect", front, "--script", str(script), "--", *kit.wireproto,
                         "proxy", "--serve", front, "--agent-protocol", back, "--", *agent,
                         stdin=subprocess.DEVNULL)
        assert proc.wait() == 1, proc.err
        assert f"run the proxy with --agent-protocol {front} (or auto)" in proc.err, proc.err
        assert "wireproto connect" not in proc.err
        assert "Traceback" not in proc.err


def test_wireproto_connect_drives_both_translations(kit: Any, tmp_path: Any) -> None:
    script = tmp_path / "prompts.txt"
    script.write_text("hello both ways\n/plan\n")
    for front, back in (("acp", "wire"), ("wire", "acp")):
        proc = kit.spawn("connect", front, "--script", str(script), "--cwd", str(tmp_path),
                         "--", *kit.wireproto, "proxy", "--serve", front, "--agent-protocol",
                         back, "--work-dir", str(tmp_path), "--", *kit.wireproto, back,
                         stdin=subprocess.DEVNULL)
        assert proc.wait() == 0, proc.err
        lines = []
        while (line := proc.queue.get(timeout=kit.limit)) is not None:
            lines.append(line.decode())
        out = "".join(lines)
        assert "You said: hello both ways" in out and "Plan done" in out, out


def test_translating_proxy_over_websocket(kit: Any, tmp_path: Any) -> None:
    server, base, token = kit.ws("proxy", "--serve", "wire", "--agent-protocol", "acp",
                                 "--work-dir", str(tmp_path), "--ws", "0", "--",
                                 *kit.wireproto, "acp")
    with connect(f"{base}/?token={token}&session=ws-1") as ws:
        ws.send(json.dumps(kit.wire_init))
        assert json.loads(ws.recv(timeout=kit.limit))["id"] == "init"
        ws.send(json.dumps(kit.request("p1", "prompt", {"user_input": "over ws"})))
        text = ""
        while (message := json.loads(ws.recv(timeout=kit.limit))).get("id") != "p1":
            payload = message.get("params", {}).get("payload", {})
            text += payload.get("text", "") if payload.get("type") == "text" else ""
        assert message["result"]["status"] == "finished"
        assert text == "You said: over ws"
    assert kit.stop(server) == 0


def test_a_wire_relay_passes_the_sdk_spawn_options_on(kit: Any, tmp_path: Any) -> None:
    proxy = kit.spawn("proxy", "--agent-protocol", "wire", "--session", "relayed-1",
                      "--work-dir", str(tmp_path), "--wire", "--", *kit.wireproto)
    proxy.send(kit.wire_init)
    assert proxy.recv()["id"] == "init"
    proxy.send(kit.request("p", "prompt", {"user_input": "kept"}))
    proxy.recv_until(lambda message: message.get("id") == "p")
    proxy.close_stdin()
    assert proxy.wait() == 0
    stored = (kit.home / "sessions" / "relayed-1.jsonl").read_text()
    assert f'"cwd":"{tmp_path}"' in stored and "kept" in stored


def test_a_relay_without_trace_hands_its_stdio_to_the_agent_and_stops_on_sigterm(
    kit: Any
) -> None:
    proxy = kit.spawn("proxy", "--serve", "acp", "--agent-protocol", "acp", "--",
                      *kit.wireproto, "acp")
    proxy.send(kit.acp_init)
    assert proxy.recv()["result"]["agentInfo"]["name"] == "wireproto-demo"
    assert kit.stop(proxy) == 0
    log = kit.log_file("proxy", proxy.pid).read_text()
    assert "on this process's stdin and stdout" in log and "exited with status" in log


def test_a_recording_relay_stops_on_sigterm_with_the_trace_complete(
    kit: Any, tmp_path: Any
) -> None:
    trace = tmp_path / "relay.jsonl"
    proxy = kit.spawn("proxy", "--serve", "acp", "--agent-protocol", "acp", "--trace",
                      str(trace), "--", *kit.wireproto, "acp")
    proxy.send(kit.acp_init)
    assert proxy.recv()["result"]["agentInfo"]["name"] == "wireproto-demo"
    assert kit.stop(proxy) == 0  # the agent's input ends, it exits, so does the relay
    assert "exited with status 0" in kit.log_file("proxy", proxy.pid).read_text()
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    assert [(line["dir"], line["msg"].get("id")) for line in lines] == [("send", 0), ("recv", 0)]


def test_a_recording_relay_over_websocket_traces_each_message(kit: Any, tmp_path: Any) -> None:
    trace = tmp_path / "ws.jsonl"
    server, base, token = kit.ws("proxy", "--serve", "acp", "--agent-protocol", "acp",
                                 "--trace", str(trace), "--ws", "0", "--", *kit.wireproto, "acp")
    with connect(f"{base}/?token={token}") as ws:
        sent = json.dumps(kit.acp_init, separators=(",", ":"))
        ws.send(sent)
        answer = ws.recv(timeout=kit.limit)
        assert json.loads(answer)["id"] == 0
    assert kit.stop(server) == 0
    lines = trace.read_text().splitlines()
    assert [json.loads(line)["dir"] for line in lines] == ["send", "recv"]
    assert lines[0].endswith(f'"msg":{sent}}}') and lines[1].endswith(f'"msg":{answer}}}')
