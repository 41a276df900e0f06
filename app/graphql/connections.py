"""Relay-style connections: every list that can grow is paged one way (edges, pageInfo, totalCount).

A connection field takes ``first``/``after`` and ``last``/``before`` and returns a result union of
its connection and ``ValidationError``: a bad page size or cursor is that union's ValidationError,
like every other input mistake, and Apollo's ``relayStylePagination`` still merges the connection's
``edges`` and ``pageInfo`` (docs/ARCHITECTURE.md, "Connections").

Cursors are opaque to clients: base64url of a JSON list ``[list name, sort key...]``, the position
of one item in its list's order (app/services/pages.py), never an offset, so rows added or removed
while a client pages shift nothing. A cursor from another list is refused by its name.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Generic, TypeVar

import strawberry
from strawberry.relay import PageInfo

from app.errors import ValidationError
from app.graphql.context import Info
from app.graphql.cost import PageSizes, page_cap
from app.graphql.errors import MAX_ID, to_graphql
from app.services.pages import Key, Page, PageRequest

N = TypeVar("N")
R = TypeVar("R")
C = TypeVar("C", bound="Connection")

DEFAULT_PAGE_SIZE = 50
PAGE_OR_MISTAKE = "The page, or what is wrong with its arguments."


@strawberry.type(description="One item of a list, with the cursor that points at it.")
class Edge(Generic[N]):
    cursor: str = strawberry.field(description="Opaque; pass it as after (or before) to page on from this item.")
    node: N = strawberry.field(description="The item.")


@strawberry.type(description="A page of a list.")
class Connection(Generic[N]):
    edges: list[Edge[N]] = strawberry.field(description="The page's items, in the list's order.")
    page_info: PageInfo = strawberry.field(description="Whether there is more before or after this page.")
    total_count: int = strawberry.field(description="How many items the whole list has, on every page.")


@dataclass(frozen=True)
class Cursor:
    """How one list's keys are written as cursors: its name and the type of each sort value."""

    name: str
    types: tuple[type, ...]

    def encode(self, key: Key) -> str:
        values = [v.isoformat() if isinstance(v, datetime) else v for v in key]
        return base64.urlsafe_b64encode(json.dumps([self.name, *values]).encode()).decode().rstrip("=")

    def decode(self, text: str, field: str) -> Key:
        refused = ValidationError(field, f"{text[:40]!r} is not a cursor of this list")
        try:
            raw = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
        except (binascii.Error, ValueError):
            raise refused from None
        if not isinstance(raw, list) or len(raw) != len(self.types) + 1 or raw[0] != self.name:
            raise refused
        return tuple(_value(value, kind, refused) for value, kind in zip(raw[1:], self.types, strict=True))


def _value(value: object, kind: type, refused: ValidationError) -> int | str | datetime:
    if kind is datetime and isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            raise refused from None
        if parsed.tzinfo is not None:
            return parsed
    elif (kind is int and type(value) is int and 0 <= value <= MAX_ID) or (kind is str and isinstance(value, str)):
        return value
    raise refused


def _size(value: int | None, field: str, limit: int) -> None:
    if value is not None and not 0 <= value <= limit:
        raise ValidationError(field, f"must be between 0 and {limit} (got {value})")


def page_request(
    cursor: Cursor,
    limit: int,
    *,
    first: int | None,
    after: str | None,
    last: int | None,
    before: str | None,
    from_end: bool = False,
) -> PageRequest:
    """Check a connection field's arguments (every mistake a ValidationError naming the argument).
    Sizes are 0 (an empty page, as Relay allows) to ``limit`` (settings.api.max_page_size); with
    neither first nor last the page is the first (or, ``from_end``, the last) DEFAULT_PAGE_SIZE."""
    if first is not None and last is not None:
        raise ValidationError("last", "give first or last, not both")
    _size(first, "first", limit)
    _size(last, "last", limit)
    if first is None and last is None:
        size = min(DEFAULT_PAGE_SIZE, limit)
        first, last = (None, size) if from_end else (size, None)
    return PageRequest(
        first=first,
        last=last,
        after=cursor.decode(after, "after") if after is not None else None,
        before=cursor.decode(before, "before") if before is not None else None,
    )


def connection(cls: type[C], page: Page[R], node: Callable[[R], object], cursor: Cursor) -> C:
    """The connection type ``cls`` for a page of rows, each made a node by ``node``."""
    cursors = [cursor.encode(key) for key in page.keys]
    return cls(
        edges=[Edge(cursor=c, node=node(row)) for c, row in zip(cursors, page.rows, strict=True)],
        page_info=PageInfo(
            has_next_page=page.has_next,
            has_previous_page=page.has_previous,
            start_cursor=cursors[0] if cursors else None,
            end_cursor=cursors[-1] if cursors else None,
        ),
        total_count=page.total,
    )


First = Annotated[
    int | None,
    strawberry.argument(
        description="Page forward: at most this many items from the start, or after `after` "
        "(0 to the server's maximum page size)."
    ),
]
After = Annotated[
    str | None, strawberry.argument(description="A cursor (an edge's or pageInfo's): the page starts after that item.")
]
Last = Annotated[
    int | None,
    strawberry.argument(
        description="Page backward: at most this many items from the end, or before `before` "
        "(0 to the server's maximum page size)."
    ),
]
Before = Annotated[
    str | None, strawberry.argument(description="A cursor (an edge's or pageInfo's): the page ends before that item.")
]


async def paged(
    info: Info,
    cls: type[C],
    cursor: Cursor,
    load: Callable[[PageRequest], Awaitable[Page[R]]],
    node: Callable[[R], object],
    *,
    first: int | None,
    after: str | None,
    last: int | None,
    before: str | None,
    from_end: bool = False,
) -> Any:
    """A connection field's resolver: the arguments checked (a mistake is the field's ValidationError,
    typed Any as call() is), the page loaded, the connection built. Under a list (each document's
    chunks in a page of documents) pages are held to the smaller nested cap: their sizes multiply."""
    limit = page_cap(info.path.as_list(), PageSizes.of(info.context.container.settings.api, DEFAULT_PAGE_SIZE))
    try:
        request = page_request(cursor, limit, first=first, after=after, last=last, before=before, from_end=from_end)
        found = await load(request)
    except ValidationError as exc:  # other failures (an unreadable database) stay GraphQL errors
        return to_graphql(exc)
    return connection(cls, found, node, cursor)
