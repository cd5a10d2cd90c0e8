"""Check encoded ACP values against the vendored official JSON schema.

Meant for tests and debugging (outbound data must always validate,
protocol-acp.md#lenient-decoding): every generated Struct knows the schema
definition its encoding must satisfy (``schema.DEF_OF``). Validation uses
``jsonschema`` (Draft 2020-12) and is slow; the protocol path never calls it.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import jsonschema
import msgspec

from wireproto.adapters.acp.schema import DEF_OF, Base

__all__ = ["SCHEMA_PATH", "schema_errors", "validate_against_schema", "validate_struct"]

SCHEMA_PATH = Path(__file__).resolve().parent / "vendor" / "schema.json"
"""The vendored stable ACP v1 schema (npm ``@agentclientprotocol/sdk`` 2.4.0)."""


@functools.cache
def _defs() -> dict[str, Any]:
    defs: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))["$defs"]
    return defs


@functools.cache
def _validator(def_name: str) -> jsonschema.Draft202012Validator:
    defs = _defs()
    if def_name not in defs:
        raise KeyError(f"no definition {def_name!r} in the ACP schema")
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": defs,
        "$ref": f"#/$defs/{def_name}",
    }
    return jsonschema.Draft202012Validator(schema)


def _as_json(obj: Any) -> Any:
    """Structs (at any depth) -> the plain JSON value they encode to."""
    return json.loads(msgspec.json.encode(obj))


def schema_errors(def_name: str, obj: Any) -> list[str]:
    """Return every violation of ``$defs/<def_name>`` by ``obj`` as ``"$.path: message"``.

    ``obj`` is a plain JSON value or anything msgspec encodes (Structs).

    Raises:
        KeyError: the schema has no such definition.
    """
    validator = _validator(def_name)
    errors = sorted(validator.iter_errors(_as_json(obj)), key=lambda e: list(e.absolute_path))
    return [f"{e.json_path}: {e.message}" for e in errors]


def validate_against_schema(def_name: str, obj: Any) -> None:
    """Check ``obj`` against ``$defs/<def_name>`` of the vendored schema.

    Raises:
        jsonschema.ValidationError: the first (most relevant) violation;
            ``json_path`` says where.
        KeyError: the schema has no such definition.
    """
    error = jsonschema.exceptions.best_match(_validator(def_name).iter_errors(_as_json(obj)))
    if error is not None:
        raise error


def validate_struct(obj: Base) -> None:
    """Check a generated Struct against the definition ``DEF_OF`` names for its class.

    Raises:
        jsonschema.ValidationError: as :func:`validate_against_schema`.
        KeyError: ``obj`` is not a generated schema Struct.
    """
    validate_against_schema(DEF_OF[type(obj)], obj)
