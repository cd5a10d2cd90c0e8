"""A MkDocs hook: the reStructuredText roles of the docstrings, shown as plain code.

The docstrings name things the way Sphinx does (``:class:`~wireproto.errors.ProcessExited```),
which the API reference (mkdocstrings, Google style) would show literally, as
``:class:ProcessExited``. This hook keeps the code and drops the role; a leading ``~``
keeps only the last dotted part, as Sphinx does.
"""

from __future__ import annotations

import re
from typing import Any

ROLE = re.compile(r":(?:attr|class|data|exc|func|meth|mod|obj):<code>(~?)([^<]*)</code>")


def strip_roles(html: str) -> str:
    """``html`` with every ``:role:<code>X</code>`` turned into ``<code>X</code>``."""
    return ROLE.sub(lambda m: f"<code>{m[2].rsplit('.', 1)[-1] if m[1] else m[2]}</code>", html)


def on_page_content(html: str, **kwargs: Any) -> str:
    """MkDocs' hook for a page's rendered content."""
    return strip_roles(html)
