"""``wireproto proxy`` against a direct connection: added latency and CPU, same run.

Contenders (each a real process tree, driven over stdio by the same raw client):

* ``direct``: the client talks to ``wireproto acp`` (the demo agent);
* ``relay``: through ``wireproto proxy --serve acp --agent-protocol acp`` to the
  same agent (on stdio without ``--trace`` the agent inherits the proxy's stdio:
  nothing is copied);
* ``relay+trace``: the same with ``--trace``: the recording relay, every message read,
  written to the trace and forwarded by the proxy (the 15% target is about this one);
* ``translate``: ACP through ``proxy --serve acp --agent-protocol wire`` to
  ``wireproto wire`` (prompt turns only, translated both ways);
* ``ws direct`` and ``ws relay+trace``: the same over a loopback websocket
  (``acp --ws`` against ``proxy --trace FILE --ws``, the relay then message by
  message on the event loop);
* ``floor (C)`` and ``floor+log (C)``: ``relay_floor.c`` (compiled with ``cc``
  when there is one, else skipped), a relay in C with the same system calls per
  chunk as the recording relay (``poll``, ``read``, with ``--log`` a ``writev``
  of the chunk and a time stamp, ``write``) and no checks: what any separate
  relay process costs on the machine, the floor under the 15% target;
* ``kimi wire direct`` (and ``kimi wire direct again``) and ``kimi wire
  relay+trace``: the real Kimi CLI's Wire server (``python -m kimi_cli.cli
  --wire``, PyPI ``kimi-cli==1.52.0``, offline with its scripted model
  provider) directly and through ``proxy --serve wire --agent-protocol wire
  --trace FILE``; ``kimi acp ...``: its ACP server (``kimi_cli.cli acp``) the
  same way. They need the Python 3.13 that has kimi-cli (``.venv-kimi`` at the
  repository root, as ``.ci/run`` makes it, or ``KIMI_PYTHON``); without it they
  are skipped, with the reason printed.

Two workloads, one after the other in each process, each measured sequentially
(one request in flight): ``request``, a cheap request (``session/set_mode``:
its answer and two notifications), the worst case for a relay since the agent
does almost nothing; and ``prompt``, a ``hello`` prompt turn (five
``session/update`` notifications and the answer). Against Kimi: ``prompt``, a
text turn (one model call), and ``tool``, a turn that reads a file with Kimi's
``ReadFile`` tool (two model calls, the tool's call and result streamed).
Kimi keeps each session's history and records it on disk, as it does for a
person. For each: the median round trip, and the CPU time of the whole
process tree (every thread of every process, from
``/proc/PID/task/TID/schedstat``, nanoseconds; the client excluded) over the
timed loop only, per operation. Rounds interleave the
contenders (a fresh process tree for each); ratios to ``direct`` are taken
within each round, and medians over rounds are reported. Kimi's trees (direct,
``direct again``, relay) are instead alive together and called in turn, one
call each, so that all see the same load; a round is then a block of calls,
and its ratios are taken within the block. ``direct again`` is a control: two
Kimi processes doing the same work differ by tens of percent in CPU per turn,
which bounds what the ratio of two trees can show. Each relay row also gives
the proxy process's own CPU against the direct tree's (``proxy_share``): what
the relay itself adds, steadier than the ratio of two trees, and how long its
threads were ready to run but queued for a CPU (``schedstat``'s second field).

The round trips' difference is the added latency against the demo agent, but
not in front of Kimi, whose own turn time differs by milliseconds between two
processes. So every recording relay is also measured by its *transit*: for
each message to the client, from the relay's stamp in its trace (``t``, taken
once it read the message, before the trace write and the forward) to the
client's receipt (``time.monotonic()`` once its ``receive`` returned; the
same ``CLOCK_MONOTONIC``). It holds the relay's work on the message after the
stamp and one hop to the client; the hop from the agent into the relay takes
the place of the one from the agent to the client in a direct connection, so
the transit is the latency the relay adds per message, less the few
microseconds between its read and its stamp. Nothing of the agent's own time
is in it. A trace counts from when the proxy opened it, which the client does
not know: each request the client sent before the relay stamped it, so the
latest of (send time - stamp) over all requests bounds that instant from
below, and each transit computed with it is too long by at most
``clock_bound`` (the shortest request hop plus the shortest transit seen; 50
calls of a method no agent has, in quick succession before the timed loops,
keep some hops short and so the bound narrow).
A message the relay passed on before the client sent its request (one that
waited in the pipe for the client) is not counted. The latency verdict is
taken on the median transit (the round trips' difference is printed too).

Nothing here is asserted; numbers from a shared machine are indicative only.
Usage: ``python benchmarks/bench_proxy.py [--quick] [--json] [--only demo|kimi]``.
``--quick`` (tiny counts, what the smoke test runs) makes 5 calibration calls instead
of 50 and starts two Kimi processes per protocol, ``direct`` and ``relay+trace``:
each costs about 2 s of CPU to start, and the control and the floor in front of Kimi
run the code of the other contenders again (they are listed as skipped, said why).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import msgspec
from anyio.streams.text import TextReceiveStream

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import emit, fmt_time, format_machine, machine_info, median, table, verdict

from wireproto.transports.subprocess import open_subprocess
from wireproto.transports.websocket import connect_websocket

ROOT = Path(__file__).resolve().parent.parent
WIREPROTO = [sys.executable, "-m", "wireproto"]
CAVEATS = [
    "a shared 2-core machine: absolute numbers vary run to run; compare ratios",
    "CPU is the whole process tree's (client excluded): the proxy adds a process",
    "the demo agent records every event on disk: its own cost is in 'direct' too",
    "CPU sums the threads alive at both ends of a timed loop (none start or end inside one)",
]
TARGET_LATENCY = 0.0002  # seconds added per message
TARGET_CPU = 0.15  # fraction added over direct
BANNER = "wireproto: listening on "
# (relay_floor.c, when a C compiler is found)
FLOORS = ("floor (C)", "floor+log (C)", "kimi wire floor+log (C)", "kimi acp floor+log (C)")
DEMO = ("direct", "relay", "relay+trace", "translate", "ws direct", "ws relay+trace",
        *FLOORS[:2])
KIMI_SETS = tuple((f"kimi {p} direct", f"kimi {p} direct again", f"kimi {p} relay+trace",
                   f"kimi {p} floor+log (C)")
                  for p in ("wire", "acp"))  # (each measured together: see measure_set)
KIMI = KIMI_SETS[0] + KIMI_SETS[1]
BASELINE = {"ws relay+trace": "ws direct",  # (the rest: "direct")
            **{name: names[0] for names in KIMI_SETS for name in names[1:]}}
TRACED = ("relay+trace", "kimi wire relay+trace", "kimi acp relay+trace")  # the target's
WORKLOADS = {"demo": ("request", "prompt"), "kimi": ("prompt", "tool")}
# (--quick: Kimi's control and floor, each one more Kimi process to start)
KIMI_LIGHTER = tuple(n for names in KIMI_SETS for n in (names[1], names[3]))
KIMI_TEXT = "text: Hello from scripted kimi"
KIMI_TOOL = ("tool_call: " + json.dumps({"id": "read", "name": "ReadFile",
                                         "arguments": json.dumps({"path": "hello.py"})}),
             "text: the file prints hello")


def kimi_python() -> tuple[str | None, str]:
    """The Python that runs kimi-cli, or ``None`` and why not."""
    python = os.environ.get("KIMI_PYTHON") or str(ROOT / ".venv-kimi" / "bin" / "python")
    if not Path(python).exists():
        return None, f"{python} does not exist"
    done = subprocess.run([python, "-c", "import kimi_cli"], capture_output=True, check=False)
    if done.returncode:
        return None, f"{python} cannot import kimi_cli"
    return python, ""


def kimi_setup(home: Path, python: str, counts: dict[str, int]) -> tuple[list[str], list[str],
                                                                        dict[str, str]]:
    """A fresh Kimi home (offline scripted provider, one script per model call of
    the run): its Wire and ACP server commands and environment."""
    share, work = home / "kimi-share", home / "work"
    (share / "credentials").mkdir(parents=True)
    (home / "kimi-home").mkdir()
    work.mkdir()
    (work / "hello.py").write_text("print('hello')\n")
    scripts = [KIMI_TEXT] * (warmup(counts["prompt"]) + counts["prompt"])
    scripts += list(KIMI_TOOL) * (warmup(counts["tool"]) + counts["tool"])
    (home / "scripts.json").write_text(json.dumps(scripts))
    config = share / "config.toml"
    config.write_text(
        'default_model = "scripted"\n\n[models.scripted]\nprovider = "scripted"\n'
        'model = "scripted"\nmax_context_size = 1000000\n\n[providers.scripted]\n'
        'type = "_scripted_echo"\nbase_url = ""\napi_key = "offline"\n\n'
        f'[providers.scripted.env]\nKIMI_SCRIPTED_ECHO_SCRIPTS = "{home / "scripts.json"}"\n')
    token = {"access_token": "offline", "refresh_token": "offline", "scope": "",
             "expires_at": time.time() + 86400, "token_type": "Bearer", "expires_in": 3600}
    (share / "credentials" / "kimi-code.json").write_text(json.dumps(token))  # (kimi acp)
    kimi = [python, "-m", "kimi_cli.cli", "--config-file", str(config)]
    env = {"HOME": str(home / "kimi-home"), "KIMI_SHARE_DIR": str(share)}
    return [*kimi, "--work-dir", str(work), "--wire"], [*kimi, "acp"], env


@functools.cache
def floor_binary() -> str:
    """``relay_floor.c`` compiled (once per run, in a directory removed at exit);
    ``RuntimeError`` with the reason when it cannot be."""
    cc = shutil.which(os.environ.get("CC", "cc"))
    if cc is None:
        raise RuntimeError("no C compiler (cc, or $CC)")
    out = Path(_floor_dir().name) / "relay_floor"
    done = subprocess.run([cc, "-O2", "-o", str(out), str(ROOT / "benchmarks" / "relay_floor.c")],
                          capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"relay_floor.c does not compile: {done.stderr.strip()[:200]}")
    return str(out)


@functools.cache
def _floor_dir() -> tempfile.TemporaryDirectory[str]:
    return tempfile.TemporaryDirectory(prefix="bench-proxy-")  # (removed at exit)


def contender_cmd(name: str, trace: Path, kimi: tuple[list[str], list[str]] = ([], [])
                  ) -> list[str]:
    proxy = [*WIREPROTO, "proxy", "--log-level", "warning", "--serve", "acp"]
    agent = [*WIREPROTO, "acp", "--log-level", "warning"]
    wire_proxy = [*WIREPROTO, "proxy", "--log-level", "warning", "--serve", "wire",
                  "--agent-protocol", "wire", "--trace", str(trace)]
    if name in FLOORS:
        backend = kimi[0] if "wire" in name else kimi[1] if "acp" in name else agent
        return [floor_binary(), *(["--log", str(trace)] if "log" in name else []), "--",
                *backend]
    return {
        "direct": agent,
        "relay": [*proxy, "--agent-protocol", "acp", "--", *agent],
        "relay+trace": [*proxy, "--agent-protocol", "acp", "--trace", str(trace), "--", *agent],
        "translate": [*proxy, "--agent-protocol", "wire", "--", *WIREPROTO, "wire",
                      "--log-level", "warning"],
        "ws direct": [*agent, "--ws", "127.0.0.1:0"],
        "ws relay+trace": [*proxy, "--agent-protocol", "acp", "--trace", str(trace), "--ws",
                           "127.0.0.1:0", "--", *agent],
        "kimi wire direct": kimi[0],
        "kimi wire direct again": kimi[0],
        "kimi wire relay+trace": [*wire_proxy, "--", *kimi[0]],
        "kimi acp direct": kimi[1],
        "kimi acp direct again": kimi[1],
        "kimi acp relay+trace": [*proxy, "--agent-protocol", "acp", "--trace", str(trace), "--",
                                 *kimi[1]],
    }[name]


@asynccontextmanager
async def open_contender(cmd: list[str], env: dict[str, str], ws: bool
                         ) -> AsyncIterator[tuple[Any, int]]:
    """Start ``cmd``; yield a message stream to it and the pid of its process tree."""
    if not ws:
        async with open_subprocess(cmd, env=env, stderr="log") as child:
            yield child, child.pid
            await child.send_eof()
        return
    async with await anyio.open_process(cmd, env=env, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL) as server:
        assert server.stderr is not None
        lines = TextReceiveStream(server.stderr)
        async with anyio.create_task_group() as tg:
            text = ""
            while BANNER not in text:
                text += await lines.receive()
            url = text.split(BANNER, 1)[1].split()[0]
            tg.start_soon(_drain, lines)
            async with connect_websocket(url) as ws_stream:
                yield ws_stream, server.pid
            server.terminate()
            await server.wait()
            tg.cancel_scope.cancel()


async def _drain(lines: TextReceiveStream) -> None:
    async for _ in lines:
        pass


def tree_cpu(pid: int) -> tuple[float, float, float]:
    """CPU seconds so far of every thread of ``pid`` and of its descendants, of
    ``pid``'s own threads (the proxy's, when ``pid`` is a proxy), and how long
    ``pid``'s threads were ready to run but waited for a CPU (the run queue)."""
    total, own, waited, todo = 0, 0, 0, [pid]
    while todo:
        current = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{current}/task/{task}/schedstat", encoding="ascii") as f:
                    ns, queued = map(int, f.read().split()[:2])
            except (OSError, ValueError):
                continue  # a thread that just ended
            total += ns
            own += ns if current == pid else 0
            waited += queued if current == pid else 0
            try:
                with open(f"/proc/{current}/task/{task}/children", encoding="ascii") as f:
                    todo.extend(int(c) for c in f.read().split())
            except (OSError, ValueError):
                pass  # (ended since: no children to count)
    return total / 1e9, own / 1e9, waited / 1e9


class Client:
    """A raw JSON-RPC client over the child's stdio: one request at a time."""

    def __init__(self, stream: Any, trace: Path | None = None) -> None:
        self.stream = stream
        self.ids = 0
        self.trace = trace  # the relay's trace, when there is one (see transit)
        self.sent: list[float] = []  # time.monotonic() before each request's write
        self.received: list[float] = []  # and once each message was received
        self.waiting: list[float] = []  # (for each: when the client began waiting for it)

    async def call(self, method: str, params: Any) -> tuple[Any, int]:
        """Send a request; return its result and the number of messages received."""
        self.ids += 1
        id = str(self.ids)  # (Kimi's Wire server takes string ids only)
        data = msgspec.json.encode(
            {"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        self.sent.append(time.monotonic())
        await self.stream.send(data)
        received = 0
        while True:
            data = await self.stream.receive()
            self.received.append(time.monotonic())
            self.waiting.append(self.sent[-1])
            message = msgspec.json.decode(data)
            received += 1
            if message.get("id") in (id, None) and "method" not in message:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result"), received


def transit(client: Client, start: int) -> dict[str, float]:
    """The relay's transit of the messages to the client received since message
    ``start``: from the relay's stamp in its trace (taken once it read a chunk)
    to the client's receipt, each; median, 90th percentile and the clock bound.

    A trace's ``t`` counts from an instant the client does not know (when the
    proxy opened the trace): it is bounded by the client's own clock (the same
    ``CLOCK_MONOTONIC``), since the relay stamps each request after the client
    sent it and each message before the client received it. The latest bound
    from the requests is taken, so each transit is an upper bound, too long by
    at most the width of that interval (``clock_bound``: the shortest request
    hop plus the shortest transit seen)."""
    assert client.trace is not None
    stamps, absolute = _stamps(client.trace.read_bytes())
    received = len(client.received)
    if len(stamps["recv"]) < received or len(stamps["send"]) != len(client.sent):
        raise RuntimeError(f"the trace has {len(stamps['recv'])} messages to the client, "
                           f"the client received {received}")
    opened = 0.0 if absolute else max(s - t for s, t in zip(client.sent, stamps["send"],
                                                             strict=True))
    latest = min(r - t for r, t in zip(client.received, stamps["recv"], strict=False))
    latest = opened if absolute else latest  # (relay_floor's stamps need no bound)
    # (a message the relay passed on before the client sent its request, such as a
    # notification after the previous answer, waited for the client: not counted)
    hops = sorted(r - t - opened for r, t, w in zip(
        client.received[start:], stamps["recv"][start:received], client.waiting[start:],
        strict=True) if t + opened >= w)
    return {"transit": median(hops), "transit_p90": hops[len(hops) * 9 // 10],
            "clock_bound": latest - opened}


class _TraceHead(msgspec.Struct):
    t: float
    dir: str


def _stamps(log: bytes) -> tuple[dict[str, list[float]], bool]:
    """The stamp of each message of a ``--trace`` file or a ``relay_floor`` log, by
    direction, and whether they are absolute (``relay_floor``'s: ``CLOCK_MONOTONIC``)."""
    stamps: dict[str, list[float]] = {"send": [], "recv": []}
    if not log.startswith(b"# "):
        for line in log.splitlines():
            head = msgspec.json.decode(line, type=_TraceHead)
            stamps[head.dir].append(head.t)
        return stamps, False
    at = 0
    while at < len(log):  # "# TIME DIR SIZE\n" then the chunk: one stamp per line ended
        end = log.index(b"\n", at)
        _, t, direction, size = log[at:end].split()
        at = end + 1 + int(size)
        stamps[direction.decode()] += [float(t)] * log.count(b"\n", end + 1, at)
    return stamps, True


async def calibrate(client: Client, count: int) -> None:
    """Calls in quick succession, each a method no agent has (answered with an error):
    the relay and the client stay warm, so some of these hops are as short as any, and
    they narrow the bound of the trace's start (see :func:`transit`)."""
    for _ in range(count):
        with contextlib.suppress(RuntimeError):
            await client.call("bench/ping", {})


def warmup(count: int) -> int:
    """How many untimed calls come before ``count`` timed ones."""
    return max(5, count // 20)


async def timed(client: Client, pid: int, method: str, params: Any, count: int
                ) -> dict[str, float]:
    """Warm up, then ``count`` sequential calls: median latency, CPU per call, messages."""
    for _ in range(warmup(count)):
        await client.call(method, params)
    (cpu0, own0, wait0), samples, messages = tree_cpu(pid), [], 0
    start = len(client.received)
    for _ in range(count):
        t0 = time.perf_counter()
        _, messages = await client.call(method, params)
        samples.append(time.perf_counter() - t0)
    cpu, own, wait = tree_cpu(pid)
    return {"latency": median(samples), "cpu": (cpu - cpu0) / count,
            "own_cpu": (own - own0) / count,  # (of the proxy, when this is one)
            "own_wait": (wait - wait0) / count,
            "messages": float(messages + 1),  # (+1: the request)
            **(transit(client, start) if client.trace else {})}


Ops = dict[str, tuple[str, Any]]  # workload -> (method, params)


@asynccontextmanager
async def session(name: str, counts: dict[str, int], home: Path, kimi_py: str | None,
                  calibration: int) -> AsyncIterator[tuple[Client, int, Ops]]:
    """Start contender ``name`` in the fresh directory ``home`` and open a session:
    its client, the pid of its process tree, and the call of each of its workloads
    (a recording relay's after ``calibration`` calls: see :func:`calibrate`)."""
    home.mkdir(parents=True)  # noqa: ASYNC240 (before the contender starts)
    env = {**os.environ, "WIREPROTO_HOME": str(home / "wireproto")}
    kimi: tuple[list[str], list[str]] = ([], [])
    cwd = home
    if name in KIMI:
        assert kimi_py is not None
        wire, acp, kimi_env = kimi_setup(home, kimi_py, counts)
        kimi, cwd = (wire, acp), home / "work"
        env.update(kimi_env)
    texts = {"prompt": "hello", "tool": "read hello.py"}
    cmd = contender_cmd(name, home / "trace.jsonl", kimi)
    async with open_contender(cmd, env, name.startswith("ws ")) as (stream, pid):
        client = Client(stream, home / "trace.jsonl"
                        if "--trace" in cmd or "--log" in cmd else None)
        if client.trace is not None:
            await calibrate(client, calibration)
        if name.startswith("kimi wire"):
            await client.call("initialize", {"protocol_version": "1.9"})
            yield client, pid, {w: ("prompt", {"user_input": texts[w]}) for w in counts}
            return
        await client.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        new, _ = await client.call("session/new", {"cwd": str(cwd), "mcpServers": []})
        sid = new["sessionId"]
        ops: Ops = {}
        if "request" in counts and name != "translate":  # (the Wire side has no modes)
            ops["request"] = ("session/set_mode", {"sessionId": sid, "modeId": "ask"})
        for workload in ("prompt", "tool"):
            if workload in counts:
                ops[workload] = ("session/prompt", {"sessionId": sid, "prompt": [
                    {"type": "text", "text": texts[workload]}]})
        yield client, pid, ops


async def measure(name: str, counts: dict[str, int], home: Path, calibration: int
                  ) -> dict[str, dict[str, float]]:
    """One contender against the demo agent: each workload, in its own process tree."""
    async with session(name, counts, home, None, calibration) as (client, pid, ops):
        return {w: await timed(client, pid, *op, counts[w]) for w, op in ops.items()}


async def measure_set(names: tuple[str, ...], counts: dict[str, int], rounds: int,
                      home: Path, kimi_py: str | None, calibration: int
                      ) -> dict[str, list[dict[str, dict[str, float]]]]:
    """Kimi directly, again directly (a control: how far two Kimi processes doing the
    same work differ) and behind the relay, all alive, one call to each in turn (so
    all see the same load); a round is a block of calls, its CPU read around it."""
    got: dict[str, list[dict[str, dict[str, float]]]] = {n: [{} for _ in range(rounds)]
                                                         for n in names}
    async with contextlib.AsyncExitStack() as stack:
        trees = {n: await stack.enter_async_context(
            session(n, counts, home / str(i), kimi_py, calibration))
            for i, n in enumerate(names)}
        for workload in counts:
            for client, _, ops in trees.values():
                for _ in range(warmup(counts[workload])):
                    await client.call(*ops[workload])
            for r in range(rounds):
                order = names if r % 2 == 0 else names[::-1]
                before = {n: tree_cpu(trees[n][1]) for n in order}
                starts = {n: len(trees[n][0].received) for n in order}
                samples: dict[str, list[float]] = {n: [] for n in order}
                messages = dict.fromkeys(order, 0)
                for _ in range(counts[workload] // rounds):
                    for n in order:
                        client, _, ops = trees[n]
                        t0 = time.perf_counter()
                        _, messages[n] = await client.call(*ops[workload])
                        samples[n].append(time.perf_counter() - t0)
                for n in order:
                    (cpu0, own0, wait0), (cpu, own, wait) = before[n], tree_cpu(trees[n][1])
                    calls = len(samples[n])
                    client = trees[n][0]
                    got[n][r][workload] = {"latency": median(samples[n]),
                                           "cpu": (cpu - cpu0) / calls,
                                           "own_cpu": (own - own0) / calls,
                                           "own_wait": (wait - wait0) / calls,
                                           "messages": float(messages[n] + 1),
                                           **(transit(client, starts[n]) if client.trace
                                              else {})}
    return got


async def run(rounds: dict[str, int], counts: dict[str, dict[str, int]],
              contenders: tuple[str, ...], kimi_py: str | None, calibration: int
              ) -> dict[str, Any]:
    got: dict[str, list[dict[str, dict[str, float]]]] = {n: [] for n in contenders}
    demo = tuple(n for n in contenders if n in DEMO)
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds["demo"]):
            for name in demo if r % 2 == 0 else demo[::-1]:
                got[name].append(await measure(name, counts["demo"],
                                               Path(tmp) / f"{r}-{name.replace(' ', '-')}",
                                               calibration))
        for names in KIMI_SETS:
            if names[0] in contenders:
                names = tuple(n for n in names if n in contenders)
                got.update(await measure_set(names, counts["kimi"], rounds["kimi"],
                                             Path(tmp) / names[0].replace(" ", "-"), kimi_py,
                                             calibration))
    out: dict[str, Any] = {}
    for name in contenders:
        direct = got.get(BASELINE.get(name, "direct"), [])
        out[name] = {}
        for workload in ("request", "prompt", "tool"):
            rows = [row[workload] for row in got[name] if workload in row]
            if not rows:
                continue
            summary = {key: median([row[key] for row in rows]) for key in rows[0]}
            if name not in ("direct", *BASELINE.values()):
                pairs = list(zip(rows, [d[workload] for d in direct], strict=True))
                summary["added_latency"] = median([a["latency"] - d["latency"] for a, d in pairs])
                summary["cpu_ratio"] = median([a["cpu"] / d["cpu"] for a, d in pairs])
                if "direct" not in name:  # the proxy process's own CPU against the direct tree
                    summary["proxy_share"] = median([a["own_cpu"] / d["cpu"] for a, d in pairs])
            if "direct" in name:
                del summary["own_cpu"], summary["own_wait"]  # (the agent's own)
            out[name][workload] = summary
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny counts (smoke test)")
    parser.add_argument("--json", action="store_true", help="print JSON only")
    parser.add_argument("--only", choices=("demo", "kimi"),
                        help="only the contenders against the demo agent, or against Kimi")
    args = parser.parse_args()
    rounds, counts = ({"demo": 1, "kimi": 2}, {"demo": {"request": 30, "prompt": 10},
                                               "kimi": {"prompt": 6, "tool": 6}}) \
        if args.quick else ({"demo": 5, "kimi": 10}, {"demo": {"request": 1000, "prompt": 400},
                                                      "kimi": {"prompt": 200, "tool": 200}})
    calibration = 5 if args.quick else 50  # (calls before the timed loops: see calibrate)
    contenders = {"demo": DEMO, "kimi": KIMI, None: DEMO + KIMI}[args.only]
    skipped = {}
    try:
        floor_binary()
    except RuntimeError as exc:
        skipped = dict.fromkeys(FLOORS, str(exc))
        contenders = tuple(name for name in contenders if name not in FLOORS)
    kimi_py, reason = kimi_python() if args.only != "demo" else (None, "")
    if kimi_py is None and args.only != "demo":
        skipped |= {name: f"kimi-cli is not installed: {reason}" for name in KIMI}
        contenders = tuple(name for name in contenders if name not in KIMI)
    if args.quick:
        skipped |= {name: "--quick starts two Kimi processes per protocol (direct and "
                    "relay+trace; each ~2 s of CPU to start)"
                    for name in KIMI_LIGHTER if name in contenders}
        contenders = tuple(name for name in contenders if name not in KIMI_LIGHTER)
    info = machine_info()
    results = anyio.run(run, rounds, counts, contenders, kimi_py, calibration)
    targets = {}
    for name in TRACED:
        for workload, row in results.get(name, {}).items():
            added = row["added_latency"] / 2  # (a round trip crosses the relay twice)
            # (the latency verdict: the relay's transit, an upper bound, free of the
            # agent's own time; the round trips' difference is printed too)
            transit = row["transit"]
            cpu = row["cpu_ratio"] - 1
            control = results.get(name.replace("relay+trace", "direct again"), {})
            targets[f"{name.removesuffix('relay+trace')}{workload}"] = {
                "added_latency_per_message": added, "transit_per_message": transit,
                "transit_bound": row["clock_bound"], "cpu_over_direct": cpu,
                "proxy_share": row["proxy_share"],
                # (Kimi: the same ratio between two direct Kimi processes, the noise)
                "control_ratio": control[workload]["cpu_ratio"] if control else None,
                "met": transit <= TARGET_LATENCY and cpu <= TARGET_CPU}
    report = {"benchmark": "proxy", "machine": info, "caveats": CAVEATS,
              "settings": {"rounds": rounds, "counts": counts, "calibration": calibration},
              "results": results,
              "skipped": skipped, "targets": targets}
    if args.json:
        emit(report)
        return
    print("Caveats:\n" + "\n".join(f"  - {c}" for c in CAVEATS))
    print(format_machine(info))
    for name, why in skipped.items():
        print(f"skipped {name}: {why}")
    rows = []
    for workload in ("request", "prompt", "tool"):
        for name in contenders:
            r = results[name].get(workload)
            if r is None:
                continue
            rows.append([f"{workload}: {name}", f"{r['messages']:.0f}", fmt_time(r["latency"]),
                         fmt_time(r["added_latency"]) if "added_latency" in r else "-",
                         fmt_time(r["cpu"]),
                         f"{r['cpu_ratio']:.2f}x" if "cpu_ratio" in r else "-",
                         f"{fmt_time(r['own_cpu'])} ({r['proxy_share']:.0%}), "
                         f"queued {fmt_time(r['own_wait'])}" if "proxy_share" in r else "-",
                         f"{fmt_time(r['transit'])} / {fmt_time(r['transit_p90'])} "
                         f"(+-{fmt_time(r['clock_bound'])})" if "transit" in r else "-"])
    print(table(["workload: contender", "messages", "round trip (median)", "added",
                 "CPU / operation", "CPU vs direct", "proxy process (share), run queue",
                 "relay transit (median / p90, bound)"], rows))
    for key, target in targets.items():
        print(f"relay+trace, {key}: at most {TARGET_LATENCY * 1e3:.1f} ms added per message: "
              f"{verdict(target['transit_per_message'] <= TARGET_LATENCY)} "
              f"(transit {fmt_time(target['transit_per_message'])}, at most "
              f"{fmt_time(target['transit_bound'])} too long; round trips "
              f"{fmt_time(target['added_latency_per_message'])} per crossing); at most "
              f"{TARGET_CPU:.0%} CPU over direct: "
              f"{verdict(target['cpu_over_direct'] <= TARGET_CPU)} "
              f"({target['cpu_over_direct']:+.0%}; the proxy process itself "
              f"{target['proxy_share']:+.0%}"
              + (f"; two direct Kimis differ by {target['control_ratio'] - 1:+.0%})"
                 if target["control_ratio"] is not None else ")"))


if __name__ == "__main__":
    main()
