"""Keyset pagination: a page of rows after or before a position in a fixed order.

A list's order is a tuple of columns ending in the row's id (so it is total), all ascending or all
descending. A position in it is a :data:`Key`, the values of those columns for one row; a page asks
for the rows after one key and/or before another, then the first or last ``n`` of them. Rows inserted
or deleted elsewhere in the list never shift a key, unlike an offset: a new message arriving while a
client pages through a chat is simply on a later page (or none). The keys are the services' side of
the API's opaque cursors (app/graphql/connections.py encodes them).

Pages of many parents (the messages of 50 sessions) are read in one statement with a window
function, so a DataLoader stays one statement per kind of thing; a single list uses ORDER BY and
LIMIT on its index.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar

from sqlalchemy import ColumnElement, Select, func, literal, select, tuple_
from sqlalchemy.orm import InstrumentedAttribute, Session

R = TypeVar("R")
Key = tuple[int | str | datetime, ...]


@dataclass(frozen=True)
class Order:
    """A list's order: ``columns`` (the last one the id), all descending or all ascending."""

    columns: tuple[InstrumentedAttribute[Any], ...]
    descending: bool = False

    def key(self, row: object) -> Key:
        return tuple(getattr(row, c.key) for c in self.columns)

    def sorted(self, backwards: bool) -> list[ColumnElement[Any]]:
        down = self.descending != backwards
        return [c.desc() if down else c.asc() for c in self.columns]

    def past(self, key: Key) -> ColumnElement[bool]:
        """Rows after ``key`` in this order."""
        row, at = tuple_(*self.columns), self._bound(key)
        return row < at if self.descending else row > at

    def ahead(self, key: Key) -> ColumnElement[bool]:
        """Rows before ``key`` in this order."""
        row, at = tuple_(*self.columns), self._bound(key)
        return row > at if self.descending else row < at

    def _bound(self, key: Key) -> ColumnElement[Any]:
        # Each value bound with its column's type (a datetime stored as SQLite writes the column's).
        return tuple_(*(literal(value, column.type) for value, column in zip(key, self.columns, strict=True)))


@dataclass(frozen=True)
class PageRequest:
    """Relay's arguments, already checked: ``first`` or ``last`` (exactly one), optional bounds."""

    first: int | None = None
    last: int | None = None
    after: Key | None = None
    before: Key | None = None

    @property
    def backwards(self) -> bool:
        return self.last is not None

    @property
    def size(self) -> int:
        size = self.last if self.backwards else self.first
        assert size is not None, "a page needs first or last"
        return size


@dataclass(frozen=True)
class Page(Generic[R]):
    """Rows in list order, with what lies beyond them and the whole list's length."""

    rows: list[R]
    keys: list[Key] = field(default_factory=list)
    has_next: bool = False
    has_previous: bool = False
    total: int = 0


def page(db: Session, entity: type[R], order: Order, request: PageRequest, where: Sequence[Any] = ()) -> Page[R]:
    """One list's page: the rows of ``entity`` matching ``where``."""
    return pages(db, entity, order, request, None, [0], where)[0]


def pages(
    db: Session,
    entity: type[R],
    order: Order,
    request: PageRequest,
    parent: InstrumentedAttribute[int] | None,
    parents: list[int],
    where: Sequence[Any] = (),
) -> list[Page[R]]:
    """The same page of each parent's list (rows whose ``parent`` column is that id), one per
    parent in the order given; ``parent`` None reads one list (``parents`` is then ``[0]``)."""
    scope = [*where, parent.in_(parents)] if parent is not None else list(where)
    bounded = scope + _bounds(order, request)
    fetched = _fetch(db, entity, order, request, parent, parents, bounded)
    totals = _counts(db, parent, scope, entity)
    # Whether rows lie on the far side of the cursor the client came from (the side the page was not
    # cut on), the cursor's own row included: it is outside the page too.
    beyond = request.before if request.backwards else request.after
    behind = (
        _counts(db, parent, [*scope, ~order.ahead(beyond) if request.backwards else ~order.past(beyond)], entity)
        if beyond is not None
        else {}
    )
    keyed = (lambda r: getattr(r, parent.key)) if parent is not None else (lambda r: 0)
    grouped: dict[int, list[R]] = defaultdict(list)
    for row in fetched:
        grouped[keyed(row)].append(row)
    return [_cut(grouped[p], order, request, totals.get(p, 0), behind.get(p, 0) > 0) for p in parents]


def _bounds(order: Order, request: PageRequest) -> list[ColumnElement[bool]]:
    bounds = []
    if request.after is not None:
        bounds.append(order.past(request.after))
    if request.before is not None:
        bounds.append(order.ahead(request.before))
    return bounds


def _fetch(
    db: Session,
    entity: type[R],
    order: Order,
    request: PageRequest,
    parent: InstrumentedAttribute[int] | None,
    parents: list[int],
    bounded: list[Any],
) -> list[R]:
    """Up to size + 1 rows per parent from the side the page is cut on (the extra one says more exist)."""
    sort = order.sorted(request.backwards)
    if parent is None or len(parents) == 1:
        query: Select[Any] = select(entity).where(*bounded).order_by(*sort).limit(request.size + 1)
        return list(db.scalars(query))
    id_column = order.columns[-1]
    rank = func.row_number().over(partition_by=parent, order_by=sort).label("rank")
    ranked = select(id_column.label("id"), rank).where(*bounded).subquery()
    query = (
        select(entity)
        .join(ranked, id_column == ranked.c.id)
        .where(ranked.c.rank <= request.size + 1)
        .order_by(parent, ranked.c.rank)
    )
    return list(db.scalars(query))


def _counts(
    db: Session, parent: InstrumentedAttribute[int] | None, where: list[Any], entity: type[Any]
) -> dict[int, int]:
    if parent is None:
        return {0: int(db.scalar(select(func.count()).select_from(entity).where(*where)) or 0)}
    return {p: int(n) for p, n in db.execute(select(parent, func.count()).where(*where).group_by(parent)).all()}


def _cut(rows: list[R], order: Order, request: PageRequest, total: int, beyond: bool) -> Page[R]:
    more = len(rows) > request.size
    rows = rows[: request.size]
    if request.backwards:
        rows.reverse()
    keys = [order.key(r) for r in rows]
    if request.backwards:
        return Page(rows, keys, has_next=beyond, has_previous=more, total=total)
    return Page(rows, keys, has_next=more, has_previous=beyond, total=total)


def page_of(items: Sequence[R], request: PageRequest) -> Page[R]:
    """A page of a list already in memory (ranked search hits), in the same terms: an item's key is
    its position in the list."""
    start = _position(request.after) + 1 if request.after is not None else 0
    end = min(_position(request.before), len(items)) if request.before is not None else len(items)
    start = min(start, end)
    if request.backwards:
        first = max(start, end - request.size)
        positions = range(first, end)
        has_previous, has_next = first > start, end < len(items)
    else:
        last = min(end, start + request.size)
        positions = range(start, last)
        has_previous, has_next = start > 0, last < end
    return Page([items[i] for i in positions], [(i,) for i in positions], has_next, has_previous, len(items))


def _position(key: Key) -> int:
    (position,) = key
    assert isinstance(position, int), "a position in an in-memory list is an int"
    return position
