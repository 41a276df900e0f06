"""Exact vector search over an in-memory copy of each embedding space, kept coherent with SQLite.

Why in memory: sqlite-vec's vec0 KNN ran 3.5-5x slower here than one numpy matrix-vector product
over the same float32 vectors, and each vec0 lookup by rowid costs about 1 ms. A float32 matrix per
space searched by brute force runs at the memory-bandwidth floor and is exact (recall 1).
docs/BENCHMARKS.md has the measurements of the alternatives.

SQLite stays the only source of truth. Every vector write and every chunk deletion appends the chunk
id to ``vector_journal`` in the same transaction (``vector_store.put`` and a trigger on ``chunks``);
within a space ``seq`` only grows. Before each search the index reads the space's first and last
``seq`` in the caller's snapshot (index seeks) and then

- is current (its revision is that last ``seq``), or
- catches up by re-reading only the vectors of the chunks journalled since its revision, or
- reloads the whole table when the journal does not reach back to its revision (pruned), when the
  space was recreated under the same id (its ``created_at`` differs), or when that many changes
  cost more than a reload.

So a search sees every vector committed before its snapshot, also one written by another process.

A :class:`View` is immutable: rows are appended to a buffer beyond the end of every published view
and never overwritten; deletions mark rows dead in a fresh mask. Searches need no lock; only a
catch-up takes the space's lock.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from app.db.database import read_snapshot_memo

FETCH_BATCH = 500  # ids per "rowid IN (...)" lookup
LOAD_BATCH = 8192
RELOAD_FRACTION = 1 / 64  # more changes than this share of the index: reload (a vec0 lookup costs ~90 rows of scan)
MIN_RELOAD_CHANGES = 256
SUBSET_SHARE = 4  # a filter keeping under 1/4 of the rows scores them alone, else all rows are scored
# A broad filter first takes the unfiltered top k x (rows / the filter's rows) x this and keeps the
# filter's among them; fewer than k left (a filter unlike the query): the exact pass over its rows.
OVERSAMPLE = 2
COMPACT_FRACTION = 0.25  # dead rows beyond this share are dropped at the next catch-up
SCORED_QUERIES = 2  # query vectors whose every score a view keeps (2 x 4 bytes x rows)
VERIFIED_VEC0_LAYOUTS = ("v0.1.9",)  # sqlite-vec versions whose storage _read_chunks understands


@dataclass(frozen=True)
class View:
    """The vectors of one space as of journal ``revision``: row ``i`` is chunk ``ids[i]``."""

    revision: int
    ids: np.ndarray  # int64 (n,)
    matrix: np.ndarray  # float32 (n, d)
    dead: np.ndarray | None  # bool (n,); None when every row is live
    sorted_ids: np.ndarray  # int64: the live ids, ascending
    sorted_rows: np.ndarray  # int64: their rows
    # Every row's score for the last few query vectors searched (by their bytes): a chat turn looks
    # its message up alone (its nearest passage's score decides whether earlier turns join the
    # query) and, when it stands alone, then searches that same vector: one pass over the vectors,
    # not two (at 100k chunks a pass is ~5 ms). A view never changes, so neither do its scores.
    _scored: dict[bytes, np.ndarray] = field(default_factory=dict, compare=False, repr=False)
    _scored_lock: threading.Lock = field(default_factory=threading.Lock, compare=False, repr=False)

    @property
    def in_process(self) -> bool:
        """Searching needs no connection (app/rag/index/rankings.py)."""
        return True

    @property
    def size(self) -> int:
        return len(self.sorted_ids)

    def search(self, query: np.ndarray, k: int, only: np.ndarray | None = None) -> list[tuple[int, float]]:
        """The ``k`` best live rows as ``(chunk_id, cosine)``, best first (ties: lower id first);
        with ``only`` (ascending chunk ids), the best of those rows alone."""
        if only is not None:
            if len(only) * SUBSET_SHARE >= len(self.ids) and (found := self._search_broad(query, k, only)) is not None:
                return found
            return self._search_rows(query, k, self.rows_of(only))
        k = min(k, self.size)
        if k <= 0:
            return []
        scores = self._every_score(query)
        return self._ranked(_best(scores, k), query)

    def _every_score(self, query: np.ndarray) -> np.ndarray:
        """Every row's cosine with ``query``, deleted rows at -inf (read-only: it may be shared)."""
        vector = np.asarray(query, dtype=np.float32)
        key = vector.tobytes()
        with self._scored_lock:
            known = self._scored.get(key)
        if known is not None:
            return known
        # einsum, not BLAS: one pass at memory speed in this thread. Multi-threaded OpenBLAS sgemv was
        # 2-5x slower than one thread on a busy 2-core machine (its threads wait for each other).
        scores = np.einsum("ij,j->i", self.matrix, vector)
        if self.dead is not None:
            scores[self.dead] = -np.inf
        scores.flags.writeable = False
        with self._scored_lock:
            while len(self._scored) >= SCORED_QUERIES:
                del self._scored[next(iter(self._scored))]
            self._scored[key] = scores
        return scores

    def _search_broad(self, query: np.ndarray, k: int, only: np.ndarray) -> list[tuple[int, float]] | None:
        """The k best of ``only``'s rows when they are among the unfiltered top ``wide`` (None: fewer
        than k of them are). Exact, not approximate: every row of the filter outside the top ``wide``
        scores no more than the k kept. Mapping half of 100k chunk ids to rows and masking the rest
        cost 1.15-1.3x the unfiltered search; this costs one membership test of ``wide`` ids."""
        k = min(k, len(only), self.size)
        if k <= 0:
            return []
        scores = self._every_score(query)
        top = _best(scores, -(-k * len(self.ids) * OVERSAMPLE // len(only)))
        top = top[np.isfinite(scores[top])]
        ids = self.ids[top]
        pos = np.minimum(np.searchsorted(only, ids), len(only) - 1)
        kept = top[only[pos] == ids]
        if len(kept) < k:
            return None
        return self._ranked(kept[_best(scores[kept], k)], query)

    def rows_of(self, chunk_ids: np.ndarray) -> np.ndarray:
        """The live rows of those of ``chunk_ids`` that have a vector."""
        if not len(chunk_ids) or not self.size:
            return np.empty(0, dtype=np.int64)
        pos = np.minimum(np.searchsorted(self.sorted_ids, chunk_ids), self.size - 1)
        return self.sorted_rows[pos[self.sorted_ids[pos] == chunk_ids]]

    def _search_rows(self, query: np.ndarray, k: int, rows: np.ndarray) -> list[tuple[int, float]]:
        k = min(k, len(rows))
        if k <= 0:
            return []
        q = np.asarray(query, dtype=np.float32)
        if len(rows) * SUBSET_SHARE < len(self.ids):
            # A selective filter: only its rows are scored (gathering them costs less than the rest).
            return self._ranked(rows[_best(np.einsum("ij,j->i", self.matrix[rows], q), k)], query)
        # A broad one: every row scored in one pass as unfiltered (a gather of most of the matrix
        # would copy it), the others then out of reach.
        every = np.einsum("ij,j->i", self.matrix, q)
        scores = np.full(len(every), -np.inf, dtype=np.float32)
        scores[rows] = every[rows]
        top = _best(scores, k)
        return self._ranked(top[np.isfinite(scores[top])], query)

    def vectors(self, chunk_ids: Iterable[int]) -> dict[int, np.ndarray]:
        wanted = np.fromiter(chunk_ids, dtype=np.int64)
        if not len(wanted) or not self.size:
            return {}
        pos = np.minimum(np.searchsorted(self.sorted_ids, wanted), self.size - 1)
        found = self.sorted_ids[pos] == wanted
        rows = self.sorted_rows[pos[found]]
        return {int(cid): self.matrix[row] for cid, row in zip(wanted[found], rows, strict=True)}

    def _ranked(self, rows: np.ndarray, query: np.ndarray) -> list[tuple[int, float]]:
        if self.dead is not None:
            rows = rows[~self.dead[rows]]
        # Rescore the few winners in float64: the same number exact_scores gives for these vectors.
        exact = np.clip(self.matrix[rows].astype(np.float64) @ np.asarray(query, dtype=np.float64), -1.0, 1.0)
        ids = self.ids[rows]
        order = np.lexsort((ids, -exact))
        return [(int(ids[i]), float(exact[i])) for i in order]


def _best(scores: np.ndarray, k: int) -> np.ndarray:
    """The positions of the ``k`` highest ``scores``, in no order (all of them when k >= their count)."""
    n = len(scores)
    return np.argpartition(scores, n - k)[n - k :] if k < n else np.arange(n)


def _empty_view(revision: int) -> View:
    none = np.empty(0, dtype=np.int64)
    return View(revision, none, np.empty((0, 0), dtype=np.float32), None, none, none)


class SpaceIndex:
    """The in-memory vectors of one vec0 table. Thread-safe; one per table per database."""

    def __init__(self, table: str, space_id: int) -> None:
        self.table = table
        self.space_id = space_id
        self._lock = threading.Lock()
        self._view: View | None = None
        self._generation: object = None  # the space row's created_at: tells a recreated space apart
        # The append buffer behind the current view: rows [0, used) are written, the rest is room.
        self._matrix = np.empty((0, 0), dtype=np.float32)
        self._ids = np.empty(0, dtype=np.int64)
        self._used = 0
        self.loads = 0  # full loads so far (tests and the benchmark read it)

    def view(self, db: Session) -> tuple[View, bool]:
        """The view to search for ``db``'s snapshot, and whether it is exactly that snapshot (so its
        vectors may stand in for the table's). A view newer than the snapshot can happen when another
        thread caught up first; it is fine for ranking, not for scoring."""
        conn = db.connection()
        generation, first, last = _journal_bounds(conn, self.space_id)
        view = self._view
        if view is not None and view.revision == last and self._generation == generation:
            return view, True
        with self._lock:
            if self._generation != generation:  # a new space under a dropped one's id: start again
                self._generation, self._view = generation, None
            view = self._view
            if view is not None and view.revision == last:
                return view, True
            if last == 0:  # an empty journal means the table has never held a vector
                return _empty_view(0), True
            if view is not None and first is not None and first <= view.revision:
                if view.revision > last:
                    return view, False
                return self._catch_up(conn, view, last), True
            return self._load(conn, last), True

    # -- building views (under the lock) ------------------------------------------------------
    def _load(self, conn: Connection, revision: int) -> View:
        # In batches, so the peak is about twice the matrix, not three times.
        batches = _read_chunks(conn, self.table)
        if batches is None:
            batches = _scan(conn, self.table)
        ids = [batch_ids for batch_ids, _ in batches]
        parts = [vectors for _, vectors in batches]
        used = sum(len(part) for part in ids)
        self._matrix = np.empty((used + used // 8, parts[0].shape[1] if parts else 0), dtype=np.float32)
        self._ids = np.empty(len(self._matrix), dtype=np.int64)
        self._used = 0
        for part_ids, part in zip(ids, parts, strict=True):
            self._matrix[self._used : self._used + len(part)] = part
            self._ids[self._used : self._used + len(part)] = part_ids
            self._used += len(part)
        self.loads += 1
        return self._publish(revision, None)

    def _catch_up(self, conn: Connection, view: View, revision: int) -> View:
        changed = [
            int(cid)
            for (cid,) in conn.exec_driver_sql(
                "SELECT DISTINCT chunk_id FROM vector_journal WHERE space_id = ? AND seq > ? AND chunk_id IS NOT NULL",
                (self.space_id, view.revision),
            )
        ]
        if len(changed) > max(MIN_RELOAD_CHANGES, view.size * RELOAD_FRACTION):
            return self._load(conn, revision)
        current = _fetch(conn, self.table, changed)
        # Every changed chunk's old row dies; the ones that still have a vector get a new row.
        dead = np.zeros(self._used, dtype=bool) if view.dead is None else view.dead.copy()
        stale = view.vectors(changed)
        if stale:
            pos = np.searchsorted(view.sorted_ids, np.fromiter(stale, dtype=np.int64))
            dead[view.sorted_rows[pos]] = True
        new_ids = np.asarray(sorted(current), dtype=np.int64)
        if len(new_ids):
            self._append(new_ids, _matrix([current[int(i)] for i in new_ids]))
            dead = np.concatenate([dead, np.zeros(len(new_ids), dtype=bool)])
        if dead.sum() > COMPACT_FRACTION * max(len(dead), 1):
            self._compact(~dead)
            dead = np.zeros(self._used, dtype=bool)
        return self._publish(revision, dead if dead.any() else None)

    def _append(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        need = self._used + len(ids)
        if self._matrix.shape[0] < need or (self._used and self._matrix.shape[1] != vectors.shape[1]):
            capacity = max(need + need // 8, 1024)
            matrix = np.empty((capacity, vectors.shape[1]), dtype=np.float32)
            matrix[: self._used] = self._matrix[: self._used]
            id_buffer = np.empty(capacity, dtype=np.int64)
            id_buffer[: self._used] = self._ids[: self._used]
            self._matrix, self._ids = matrix, id_buffer  # views keep the old buffers alive while they need them
        self._matrix[self._used : need] = vectors
        self._ids[self._used : need] = ids
        self._used = need

    def _compact(self, live: np.ndarray) -> None:
        self._matrix = np.ascontiguousarray(self._matrix[: self._used][live])
        self._ids = self._ids[: self._used][live].copy()
        self._used = len(self._ids)

    def _publish(self, revision: int, dead: np.ndarray | None) -> View:
        ids = self._ids[: self._used]
        rows = np.arange(self._used, dtype=np.int64) if dead is None else np.flatnonzero(~dead)
        order = np.argsort(ids[rows], kind="stable")
        view = View(revision, ids, self._matrix[: self._used], dead, ids[rows][order], rows[order])
        self._view = view
        return view


def _journal_bounds(conn: Connection, space_id: int) -> tuple[object, int | None, int]:
    """The space's creation time and its first and last journal seq (0: an empty journal)."""
    # Scalar subqueries, each one index seek; min() and max() in one SELECT would scan the range.
    row = conn.exec_driver_sql(
        "SELECT created_at, (SELECT min(seq) FROM vector_journal WHERE space_id = ?), "
        "(SELECT max(seq) FROM vector_journal WHERE space_id = ?) FROM embedding_spaces WHERE id = ?",
        (space_id, space_id, space_id),
    ).one_or_none()
    if row is None:
        return None, None, 0
    generation, first, last = row
    return generation, (None if first is None else int(first)), int(last or 0)


def _fetch(conn: Connection, table: str, chunk_ids: Sequence[int]) -> dict[int, bytes]:
    found: dict[int, bytes] = {}
    for start in range(0, len(chunk_ids), FETCH_BATCH):
        batch = tuple(chunk_ids[start : start + FETCH_BATCH])
        rows = conn.exec_driver_sql(
            f"SELECT rowid, embedding FROM {table} WHERE rowid IN ({','.join('?' * len(batch))})", batch
        )
        found.update((int(rowid), blob) for rowid, blob in rows)
    return found


def _scan(conn: Connection, table: str) -> list[tuple[np.ndarray, np.ndarray]]:
    batches = []
    for rows in conn.exec_driver_sql(f"SELECT rowid, embedding FROM {table}").partitions(LOAD_BATCH):
        batches.append(
            (np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)), _matrix([r[1] for r in rows]))
        )
    return batches


def _read_chunks(conn: Connection, table: str) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """The table's vectors read from sqlite-vec's own storage: blobs of up to 1024 vectors with their
    rowids and a validity bitmap. About 7x faster than a scan through the virtual table (2 s instead
    of 11 s for 500k vectors here). Only for table layouts verified here and only when the count
    agrees with the table's; otherwise None, and the caller scans."""
    try:
        created = conn.exec_driver_sql(f"SELECT value FROM {table}_info WHERE key = 'CREATE_VERSION'").scalar()
        if created not in VERIFIED_VEC0_LAYOUTS:
            return None
        batches = []
        rows = conn.exec_driver_sql(
            f"SELECT c.validity, c.rowids, v.vectors FROM {table}_chunks c "
            f"JOIN {table}_vector_chunks00 v ON v.rowid = c.chunk_id ORDER BY c.chunk_id"
        )
        for validity, rowids, vectors in rows:
            ids = np.frombuffer(rowids, dtype=np.int64)
            valid = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")[: len(ids)]
            matrix = np.frombuffer(vectors, dtype=np.float32)
            if len(valid) != len(ids) or len(matrix) % max(len(ids), 1):
                return None
            live = valid.astype(bool)
            batches.append((ids[live], matrix.reshape(len(ids), -1)[live]))
        count = conn.exec_driver_sql(f"SELECT count(*) FROM {table}_rowids").scalar_one()
    except DBAPIError:
        return None
    return batches if sum(len(ids) for ids, _ in batches) == count else None


def _matrix(blobs: Sequence[bytes]) -> np.ndarray:
    if not blobs:
        return np.empty((0, 0), dtype=np.float32)
    return np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1)


# One registry per connection pool, i.e. per Database: the index lives exactly as long as the
# engine that reads the file, and two databases in one process never share one.
_registries: weakref.WeakKeyDictionary[object, dict[str, SpaceIndex]] = weakref.WeakKeyDictionary()
_registry_lock = threading.Lock()


def view_for(db: Session, table: str, space_id: int) -> tuple[View, bool]:
    """The current view of ``table`` for ``db``'s snapshot (see :meth:`SpaceIndex.view`), remembered
    for the rest of the transaction (a snapshot does not change)."""
    # What a writing transaction sees may still roll back; it must not enter the shared index.
    views: dict[str, tuple[View, bool]] = read_snapshot_memo(db, "vector_views", "vector search")
    if table not in views:
        views[table] = _view_for(db, table, space_id)
    return views[table]


def _view_for(db: Session, table: str, space_id: int) -> tuple[View, bool]:
    indexes = _indexes(db)
    with _registry_lock:
        index = indexes.get(table)
        if index is None or index.space_id != space_id:
            index = indexes[table] = SpaceIndex(table, space_id)
    loads = index.loads
    view, exact = index.view(db)
    if index.loads != loads:  # a (re)load is rare: a good moment to forget the indexes of dropped spaces
        existing = {name for (name,) in db.connection().exec_driver_sql("SELECT name FROM sqlite_master")}
        with _registry_lock:
            for name in [t for t in indexes if t not in existing]:
                del indexes[name]
    return view, exact


def loaded_rows(pool: object) -> tuple[int, int]:
    """(spaces, vectors) this process holds in memory for the engine whose pool is ``pool``."""
    with _registry_lock:
        indexes = list(_registries.get(pool, {}).values())
    views = [index._view for index in indexes if index._view is not None]
    return len(views), sum(view.size for view in views)


def _indexes(db: Session) -> dict[str, SpaceIndex]:
    bind = db.get_bind()
    pool = bind.engine.pool if isinstance(bind, Connection) else bind.pool
    with _registry_lock:
        return _registries.setdefault(pool, {})
