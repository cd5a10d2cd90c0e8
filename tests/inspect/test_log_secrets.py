"""``wireproto inspect --log-level debug``: no presented credential reaches its log file."""

from __future__ import annotations

import base64
import sys
from pathlib import Path
from typing import Any

from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

WRONG = "WRONGTOKEN-5d7a19"
BASIC = base64.b64encode(b"user:BASICSECRET-a2b4c6").decode()


def _status(url: str, headers: dict[str, str] | None = None) -> int:
    try:
        with connect(url, additional_headers=headers, open_timeout=10):
            return 101
    except InvalidStatus as exc:
        return exc.response.status_code


def test_the_inspector_debug_log_holds_no_credential(
    start_inspector: Any, tmp_path: Path
) -> None:
    proc = start_inspector("--log-level", "debug", "--agent-protocol", "acp", "--",
                           sys.executable, "-m", "wireproto", "acp")
    ws = proc.base.replace("http://", "ws://") + "/ws"
    assert _status(f"{ws}?token={WRONG}") == 401
    assert _status(f"{ws}?%74oken={WRONG}") == 401
    assert _status(ws, {"Authorization": f"Bearer {WRONG}"}) == 401
    assert _status(ws, {"Authorization": f"Basic {BASIC}"}) == 401
    assert _status(f"{ws}?token={proc.token}") == 101
    assert proc.stop() == 0
    logs = list((tmp_path / "home" / "logs").glob("inspect-*.log"))
    assert logs, "no log file"
    text = "".join(p.read_text() for p in logs)
    for secret in (WRONG, BASIC, "BASICSECRET", proc.token):
        assert secret not in text, f"{secret} in the log:\n{text}"
    assert "DEBUG" in text  # the file really is at debug level
