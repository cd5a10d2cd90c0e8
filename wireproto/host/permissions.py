"""Permission requests of a bound harness: the host decides about its own tools.

A harness asks its client (the host) before it runs a tool, with
``session/request_permission``. The harness names the tool only in the
tool call's ``title``, in its own way; :data:`TITLE_FORMS` recognises the
host's bridged tools in the forms real harnesses use:

===================================== ===================================
``mcp__<prefix>__<prefix>_read``      Claude Code (``mcp__<server>__<tool>``)
``<prefix>_read: {"path": "a.txt"}``  Kimi CLI (name, colon, arguments)
``<prefix>_read`` / ``<prefix>_read(...)``  the bare name, or a call
===================================== ===================================

For a request about one of the host's tools (:func:`host_tool_name`) the
**policy** answers: the first ``allow_once`` (else ``allow_always``) option
when the binding's policy permits the tool, the first ``reject_*`` option
when it does not. Every other request goes to the embedding program's
``on_permission`` (without one: the first ``reject_*`` option).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

from wireproto.adapters.acp import schema as s
from wireproto.adapters.acp.client.state import PermissionHandler, default_outcome, option_of_kind

__all__ = ["TITLE_FORMS", "PermissionDecider", "host_tool_name"]

log = logging.getLogger(__name__)

_NAME = r"[A-Za-z0-9_]+"

TITLE_FORMS: tuple[Callable[[str], str], ...] = (
    lambda prefix: rf"^mcp__{prefix}__(?P<name>{prefix}_{_NAME})\b",
    lambda prefix: rf"^(?P<name>{prefix}_{_NAME})(?:\s*[:(]|\s*$)",
)
"""Title patterns (given the prefix) whose ``name`` group is a bridged tool's vendor name."""


def host_tool_name(title: str, prefix: str) -> str | None:
    """The vendor name of the host tool a permission title is about, or ``None``."""
    text = title.strip()
    for form in TITLE_FORMS:
        match = re.match(form(re.escape(prefix)), text)
        if match is not None:
            return match.group("name")
    return None


Verdict = Callable[[str], "bool | None"]
"""Vendor tool name -> permitted now (``None``: not one of the host's tools)."""


class PermissionDecider:
    """The ``on_permission`` of a binding's ACP client (see the module docstring).

    Args:
        prefix: the host's prefix.
        verdict: whether the binding's policy permits a vendor tool name now.
        fallback: the embedding program's handler for everything else.
        label: a label for log lines.
    """

    def __init__(
        self, prefix: str, verdict: Verdict, fallback: PermissionHandler | None, label: str
    ) -> None:
        self.prefix = prefix
        self.verdict = verdict
        self.fallback = fallback
        self.label = label

    async def __call__(
        self, request: s.RequestPermissionRequest
    ) -> s.RequestPermissionOutcome | str:
        title = request.tool_call.title
        name = host_tool_name(title, self.prefix) if isinstance(title, str) else None
        allowed = self.verdict(name) if name is not None else None
        if allowed is None:
            if self.fallback is None:
                return default_outcome(request)
            return await self.fallback(request)
        kinds: tuple[s.PermissionOptionKind, ...] = (
            ("allow_once", "allow_always") if allowed else ("reject_once", "reject_always"))
        option = option_of_kind(request, *kinds)
        log.info("%s: permission for host tool %s: %s by policy", self.label, name,
                 "allowed" if allowed else "refused")
        if option is None:
            return default_outcome(request) if not allowed else s.CancelledPermissionOutcome()
        return s.SelectedPermissionOutcome(option_id=option.option_id)
