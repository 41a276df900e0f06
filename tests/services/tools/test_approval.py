"""The approval's check of a preview (tool_approval.still_as_previewed), at the edges the live tests
cannot reach in order: a schema changed between the argument check and the claim, a preview stored
before fingerprints, one a moment from expiry."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from app.db.enums import HttpMethod, ToolKind
from app.db.models import StoredToolCall, Tool, utcnow
from app.errors import ConflictError
from app.services.tools.approval import Checked, still_as_previewed
from app.services.tools.request import fingerprint

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"title": {"type": "string"}}}
ARGS = {"title": "Printer on fire"}


def _tool(**changes: Any) -> Tool:
    fields: dict[str, Any] = {
        "name": "create_ticket",
        "kind": ToolKind.HTTP,
        "http_method": HttpMethod.POST,
        "url_template": "https://tickets.example/tickets",
        "header_secrets": {"Authorization": "crm_token"},
        "input_schema": SCHEMA,
    }
    return Tool(**(fields | changes))


def _call(age: timedelta = timedelta(0), fingerprinted: bool = True) -> StoredToolCall:
    return StoredToolCall(
        id=7,
        tool_name="create_ticket",
        arguments='{"title": "Printer on fire"}',
        created_at=utcnow() - age,
        request_fingerprint=fingerprint(_tool(), ARGS) if fingerprinted else None,
    )


def test_the_previewed_request_is_approved_with_its_checked_arguments() -> None:
    assert still_as_previewed(_call(), _tool(), window=60, checked=Checked(SCHEMA, ARGS)) == ARGS


# Each case builds its call when the test runs, not at collection: a preview's age is measured from
# its creation, and collection may come long before the test (xdist workers collect everything first).
@pytest.mark.parametrize(
    ("case", "why"),
    [
        (
            lambda: (_call(timedelta(seconds=61)), _tool(), Checked(SCHEMA, ARGS)),
            "its preview expired (60 s to approve it)",
        ),
        (lambda: (_call(), None, Checked(SCHEMA, ARGS)), "was deleted since it was previewed"),
        (lambda: (_call(), _tool(input_schema={"type": "object"}), Checked(SCHEMA, ARGS)), "the tool changed"),
        (lambda: (_call(), _tool(), None), "the tool changed"),
        (lambda: (_call(fingerprinted=False), _tool(), Checked(SCHEMA, ARGS)), "the tool changed"),
        (
            lambda: (_call(), _tool(header_secrets={"Authorization": "payments"}), Checked(SCHEMA, ARGS)),
            "the tool changed",
        ),
        (
            lambda: (_call(), _tool(url_template="https://tickets.example/{title}"), Checked(SCHEMA, ARGS)),
            "the tool changed",
        ),
    ],
    ids=["expired", "deleted", "schema", "unchecked", "no-fingerprint", "secret", "url"],
)
def test_anything_else_is_refused_saying_why(
    case: Callable[[], tuple[StoredToolCall, Tool | None, Checked | None]], why: str
) -> None:
    call, tool, checked = case()
    with pytest.raises(ConflictError, match="tool call 7 can no longer be approved") as refused:
        still_as_previewed(call, tool, window=60, checked=checked)
    assert why in refused.value.message
