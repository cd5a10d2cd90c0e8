"""Lazy re-exports for the package roots.

A package root (``wireproto.rpc``, ``wireproto.transports`` ...) names its
public API in ``__all__`` but imports a submodule only when one of its names
is first used, so that importing one module of a layer never pulls in the
rest of it (the import rules of ``docs/architecture.md``).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["attach"]


def attach(
    package: str, table: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Return the ``__getattr__`` and ``__dir__`` of ``package``.

    Args:
        package: the package's ``__name__``.
        table: public name -> the submodule (relative, e.g. ``".peer"``) that defines it.
    """

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)  # later lookups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *table})

    return __getattr__, __dir__
