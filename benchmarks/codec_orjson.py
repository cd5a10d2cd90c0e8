"""Codec contender: ``orjson`` to and from plain dicts.

No validation and no types: the fastest general-purpose JSON library for
Python, for reference. Run by ``bench_codec.py``.
"""

from __future__ import annotations

import copy
from importlib import metadata
from typing import Any

import orjson
from _codec_runner import Contender, main
from _messages import MESSAGES

_dumps = orjson.dumps
_loads = orjson.loads
_NEWLINE = orjson.OPT_APPEND_NEWLINE


def prepare(case: str, message: dict[str, Any]) -> dict[str, Any]:
    """A private copy of the message dict."""
    return copy.deepcopy(message)


def encode(message: dict[str, Any]) -> bytes:
    """Dict -> compact JSON line."""
    return _dumps(message, option=_NEWLINE)


def decode(data: bytes) -> Any:
    """Bytes -> dict, then the params/result member (no validation)."""
    message = _loads(data)
    return message["params"] if "method" in message else message["result"]


CONTENDER = Contender(
    name="orjson",
    version=f"orjson {metadata.version('orjson')}",
    validates=False,
    prepare=prepare,
    encode=encode,
    decoders=dict.fromkeys(MESSAGES, decode),
    to_plain=lambda value: value,
    notes=["dicts only: no validation, no types"],
)

if __name__ == "__main__":
    main(CONTENDER)
