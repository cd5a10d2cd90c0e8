"""Codec contender: the standard library's ``json`` to and from plain dicts.

No validation and no types: the lower bound of what "parsing JSON in Python"
costs with the stdlib, for reference. Run by ``bench_codec.py``.
"""

from __future__ import annotations

import copy
import json
import platform
from typing import Any

from _codec_runner import Contender, main
from _messages import MESSAGES

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True).encode
_loads = json.loads


def prepare(case: str, message: dict[str, Any]) -> dict[str, Any]:
    """A private copy of the message dict."""
    return copy.deepcopy(message)


def encode(message: dict[str, Any]) -> bytes:
    """Dict -> compact JSON line (the same call shape the ACP SDK's sender uses)."""
    return (_dumps(message) + "\n").encode("utf-8")


def decode(data: bytes) -> Any:
    """Bytes -> dict, then the params/result member (no validation)."""
    message = _loads(data)
    return message["params"] if "method" in message else message["result"]


CONTENDER = Contender(
    name="json",
    version=f"stdlib json (Python {platform.python_version()})",
    validates=False,
    prepare=prepare,
    encode=encode,
    decoders=dict.fromkeys(MESSAGES, decode),
    to_plain=lambda value: value,
    notes=["dicts only: no validation, no types"],
)

if __name__ == "__main__":
    main(CONTENDER)
