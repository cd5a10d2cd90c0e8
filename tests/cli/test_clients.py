"""How ``wireproto connect`` words what a Wire agent asks."""

from __future__ import annotations

import pytest

from wireproto.adapters.wire import messages as m
from wireproto.cli.clients import approval_label


@pytest.mark.parametrize("sender, action, description, label", [
    ("write", "write file", "Write o.txt", "write: write file - Write o.txt"),
    ("write", "write", "Write o.txt", "write: Write o.txt"),  # the tool named the action
    ("proxy", "Write w.txt", "Write w.txt", "proxy: Write w.txt"),
    ("shell", "", "Run ls", "shell: Run ls"),
    ("", "", "", "an approval"),
])
def test_each_part_of_an_approval_is_said_once(
    sender: str, action: str, description: str, label: str
) -> None:
    request = m.ApprovalRequest(id="a", tool_call_id="t", sender=sender, action=action,
                                description=description)
    assert approval_label(request) == label
