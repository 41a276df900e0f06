"""BM25 keyword search over an in-memory index per project, kept coherent with SQLite.

Why in memory: FTS5 answers an OR query by scoring every chunk that holds any of the question's
words, with no top-k pruning, and its statistics are global (a document in one project changed
every other project's ranking). Here each project has its own postings (term -> chunk rows and
term frequencies), its own document count, lengths and document frequencies, and a search touches
only the posting lists of the question's terms (common words only where they can still change the
top k: MaxScore), adds their BM25 contributions into one array and selects the best with
``argpartition``. docs/BENCHMARKS.md has the measurements.

Tokens are exactly FTS5's (``porter unicode61 remove_diacritics 2``, migration 0004): the UTF-8 of
the text is cut at ASCII non-alphanumerics (always separators for unicode61) into runs, and every
distinct run is tokenised, case-folded and stemmed by SQLite's own FTS5 tokenizer once per process
(an in-memory FTS5 table and its ``fts5vocab``; the cache of runs lives as long as the process), so
the index and the question agree with ``chunks_fts`` by construction. The score is FTS5's ``bm25()`` (k1 = 1.2,
b = 0.75, idf = ln((N - n + 0.5) / (n + 0.5)), at least 1e-6) with the project's N, n and average
length, negated like FTS5's: lower is better. One deliberate difference: a question word that
tokenises to several terms (``max_tokens``) is those terms ORed, where FTS5 would match the phrase.

SQLite stays the source of truth. Every insert, delete and text update of a chunk appends its id to
``keyword_journal`` (triggers, migration 0010) in the same transaction; within a project ``seq``
only grows. Before each search the index reads the project's first and last ``seq`` in the
caller's snapshot (two index seeks) and is current, or catches up by re-reading only the text of
the chunks journalled since its revision, or reloads the project when the journal no longer reaches
back to its revision (pruned) or more than half of it changed. So a search sees every chunk
committed before its snapshot, also one written by another process.

A :class:`View` is immutable: a catch-up adds a small segment of postings (merged into the base
segment once it grows past a quarter of it, or when too many rows are dead) and marks replaced and
deleted rows dead in a fresh mask. Searches need no lock; only a catch-up takes the project's lock.
"""

from __future__ import annotations

import re
import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pysqlite3.dbapi2 as sqlite3
from scipy import sparse
from sqlalchemy import Connection
from sqlalchemy.orm import Session

from app.db.database import read_snapshot_memo

TOKENIZE = "porter unicode61 remove_diacritics 2"  # chunks_fts's tokenizer (migration 0004)
K1 = 1.2
B = 0.75
MIN_IDF = 1e-6  # FTS5's floor for terms in more than half the documents
MAX_TERMS = 64  # question words taken, as the FTS5 query took them
FETCH_BATCH = 500  # ids per "id IN (...)" lookup
LOAD_BATCH = 4096  # chunk texts tokenised at a time
MERGE_FRACTION = 0.25  # a delta segment beyond this share of the base's postings is merged into it
COMPACT_FRACTION = 0.25  # dead rows beyond this share are dropped at the next merge
RELOAD_FRACTION = 0.5  # more changed chunks than this share of the index: reload instead
MAX_TF = np.iinfo(np.uint16).max
MAX_PRUNING_CHECKS = 4  # k-th best score computed at most this often per search (each costs a pass over the rows)
FILTER_MASKS = 8  # filters' row masks a view keeps (100 KB each at 100k rows)

_WORD = re.compile(r"\w+", re.UNICODE)  # how the question is cut into words (as the FTS5 query was)
# Text is cut into runs of bytes of its UTF-8 between ASCII non-alphanumerics, which unicode61
# always treats as separators; SQLite's tokenizer splits a run further where it has other
# separators (no-break spaces, dashes, ...). Multi-byte characters are never cut.
_SEPARATORS = bytes(c if c >= 0x80 or chr(c).isalnum() else 0x20 for c in range(256))
_BOUNDARY = b"\x00"  # the run between texts encoded together: no translated text can hold it


def _runs(text: str) -> list[bytes]:
    return text.encode().translate(_SEPARATORS).split()


class Tokenizer:
    """FTS5's tokenizer, cached per distinct run of bytes; term ids are this process's."""

    def __init__(self, tokenize: str = TOKENIZE) -> None:
        self._lock = threading.Lock()
        self._sqlite = sqlite3.connect(":memory:", check_same_thread=False)
        self._tokenize = tokenize
        self.term_ids: dict[str, int] = {}
        self._names: list[str] = []  # term id -> a word that gives it (term_names)
        self._runs: dict[bytes, int] = {_BOUNDARY: 0}  # run -> run id; 0 is the boundary between texts
        self._run_terms: list[tuple[int, ...]] = [()]
        # The same as arrays for encode(): run id -> its first term in flat, and how many.
        self._arrays: tuple[np.ndarray, np.ndarray, np.ndarray] = (
            np.zeros(1, dtype=np.int64),
            np.zeros(1, dtype=np.int64),
            np.zeros(0, dtype=np.int32),
        )

    def terms(self, text: str) -> list[int]:
        """The term ids of ``text``, in order (as FTS5 would index it)."""
        runs = _runs(text)
        self._learn(runs)
        return [t for run in runs for t in self._run_terms[self._runs[run]]]

    def distinct_terms(self, texts: Iterable[str]) -> set[int]:
        """The term ids that ``texts`` hold together, each distinct run of bytes looked up once
        (what a page's candidates hold of a question's words: app/rag/search/evidence.py)."""
        runs: set[bytes] = set()
        for text in texts:
            runs.update(_runs(text))
        self._learn(runs)
        return {t for run in runs for t in self._run_terms[self._runs[run]]}

    def term_names(self) -> list[str]:
        """For each term id (the index), the first word seen that tokenises to just that term (else
        the token): what other backends, with their own stemmers, search for (app/rag/index/pg_rankings.py).
        Only ever appended to, so a reader may index it without the lock."""
        return self._names

    def question(self, text: str) -> dict[int, int]:
        """The question's terms with how many of its distinct words (lower-cased, the first
        ``MAX_TERMS``) give each: FTS5 scored ``"swim" OR "swimming"`` as two phrases."""
        words = list(dict.fromkeys(w.lower() for w in _WORD.findall(text)))[:MAX_TERMS]
        weights: dict[int, int] = {}
        for word in words:
            for term in dict.fromkeys(self.terms(word)):
                weights[term] = weights.get(term, 0) + 1
        return weights

    def encode(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Every term of ``texts`` as ``(text index, term id)`` arrays (int32), in text order."""
        if not texts:
            return np.empty(0, dtype=np.int32), np.empty(0, dtype=np.int32)
        runs = b" \x00 ".join([t.encode().translate(_SEPARATORS) for t in texts]).split()
        try:
            ids = np.fromiter(map(self._runs.__getitem__, runs), dtype=np.int64, count=len(runs))
        except KeyError:  # words this process has not seen yet
            self._learn(runs)
            ids = np.fromiter(map(self._runs.__getitem__, runs), dtype=np.int64, count=len(runs))
        first, count, flat = self._tables(ids)
        per_run = count[ids]
        doc_of_run = np.cumsum(ids == 0)
        words = ids != 0
        if np.array_equal(per_run, words):  # one term per run, none per boundary: the usual case
            return doc_of_run[words].astype(np.int32), flat[first[ids[words]]]
        total = int(per_run.sum())
        ends = np.cumsum(per_run)
        offsets = np.arange(total, dtype=np.int64) - np.repeat(ends - per_run, per_run)
        terms = flat[np.repeat(first[ids], per_run) + offsets]
        return np.repeat(doc_of_run, per_run).astype(np.int32), terms.astype(np.int32, copy=False)

    def _learn(self, runs: Iterable[bytes]) -> None:
        new = set(runs).difference(self._runs)
        if not new:
            return
        with self._lock:
            fresh = list(new.difference(self._runs))
            if not fresh:
                return
            for run, tokens in zip(fresh, self._analyse([r.decode() for r in fresh]), strict=True):
                for token in tokens:
                    if token not in self.term_ids:
                        # A word that gives just this token, when the run is one: another stemmer
                        # is best given a word, not this stemmer's stem.
                        self._names.append(run.decode().lower() if len(tokens) == 1 else token)
                        self.term_ids[token] = len(self.term_ids)
                self._run_terms.append(tuple(self.term_ids[t] for t in tokens))
                self._runs[run] = len(self._run_terms) - 1  # after its terms: a reader finding it finds them

    def _tables(self, run_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Arrays covering every run id in ``run_ids`` (rebuilt when runs were learnt since)."""
        arrays = self._arrays
        if not len(run_ids) or int(run_ids.max()) < len(arrays[0]):
            return arrays
        with self._lock:
            arrays = self._arrays
            known = len(arrays[0])
            if int(run_ids.max()) >= known:
                more = self._run_terms[known:]
                count = np.fromiter(map(len, more), dtype=np.int64, count=len(more))
                first = len(arrays[2]) + np.concatenate([[0], np.cumsum(count)[:-1]]).astype(np.int64)
                flat = np.fromiter((t for terms in more for t in terms), dtype=np.int32, count=int(count.sum()))
                arrays = self._arrays = (
                    np.concatenate([arrays[0], first]),
                    np.concatenate([arrays[1], count]),
                    np.concatenate([arrays[2], flat]),
                )
            return arrays

    def _analyse(self, runs: list[str]) -> list[list[str]]:
        """Each run's tokens as SQLite's FTS5 tokenizer makes them."""
        db = self._sqlite
        db.execute("DROP TABLE IF EXISTS temp.words")
        db.execute(f"CREATE VIRTUAL TABLE temp.words USING fts5(w, tokenize='{self._tokenize}')")
        db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.tokens USING fts5vocab(temp, words, 'instance')")
        db.executemany("INSERT INTO temp.words(rowid, w) VALUES (?, ?)", enumerate(runs, start=1))
        tokens: list[list[str]] = [[] for _ in runs]
        for term, doc in db.execute("SELECT term, doc FROM temp.tokens ORDER BY doc, offset"):
            tokens[doc - 1].append(term)
        return tokens


_tokenizer: Tokenizer | None = None
_tokenizer_lock = threading.Lock()


def tokenizer() -> Tokenizer:
    global _tokenizer
    with _tokenizer_lock:
        if _tokenizer is None:
            _tokenizer = Tokenizer()
        return _tokenizer


# -- postings ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Segment:
    """Postings of some rows: for term ``terms[i]``, rows ``rows[starts[i]:starts[i+1]]`` with
    their term frequencies."""

    terms: np.ndarray  # int32, ascending
    starts: np.ndarray  # int64 (len(terms) + 1,)
    rows: np.ndarray  # int32
    tf: np.ndarray  # uint16

    @property
    def postings(self) -> int:
        return len(self.rows)

    @property
    def nbytes(self) -> int:
        return self.terms.nbytes + self.starts.nbytes + self.rows.nbytes + self.tf.nbytes

    def expanded(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every posting as ``(term, row, tf)``."""
        return np.repeat(self.terms, np.diff(self.starts)), self.rows, self.tf


def _segment(terms: np.ndarray, rows: np.ndarray, tf: np.ndarray, n_rows: int) -> Segment:
    """Postings grouped by term; repeated (term, row) pairs are summed."""
    if not len(terms):
        none = np.empty(0, dtype=np.int32)
        return Segment(none, np.zeros(1, dtype=np.int64), none, np.empty(0, dtype=np.uint16))
    width = int(terms.max()) + 1
    matrix = sparse.csr_matrix(
        (tf.astype(np.int32), (terms, rows)), shape=(width, max(n_rows, 1)), dtype=np.int32
    )  # term-major; the COO -> CSR conversion sums repeats in one linear pass
    matrix.sum_duplicates()
    lengths = np.diff(matrix.indptr)
    present = np.flatnonzero(lengths).astype(np.int32)
    starts = np.zeros(len(present) + 1, dtype=np.int64)
    np.cumsum(lengths[present], out=starts[1:])
    return Segment(present, starts, matrix.indices.astype(np.int32), np.minimum(matrix.data, MAX_TF).astype(np.uint16))


@dataclass(frozen=True)
class View:
    """A project's postings as of journal ``revision``: row ``i`` is chunk ``ids[i]``."""

    revision: int
    segments: tuple[Segment, ...]
    ids: np.ndarray  # int64 (rows,)
    lengths: np.ndarray  # int32 (rows,): tokens in the chunk (FTS5's document length)
    dead: np.ndarray | None  # bool (rows,); None when every row is live
    sorted_ids: np.ndarray  # int64: the live ids, ascending
    sorted_rows: np.ndarray  # int64: their rows
    norm: np.ndarray  # float64 (rows,): k1 * (1 - b + b * length / average length)
    # A document filter's rows as a mask, per filter (by identity: app/rag/search/document_filter.py
    # hands out one array per filter and revision): marking half of 100k rows cost ~2 ms a search,
    # a fifth of a hybrid search's time.
    _filter_masks: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict, compare=False, repr=False)

    @property
    def in_process(self) -> bool:
        """Searching needs no connection (app/rag/index/rankings.py)."""
        return True

    @property
    def size(self) -> int:
        return len(self.sorted_ids)

    @property
    def nbytes(self) -> int:
        arrays = (self.ids, self.lengths, self.sorted_ids, self.sorted_rows, self.norm)
        return sum(s.nbytes for s in self.segments) + sum(a.nbytes for a in arrays)

    def search(self, weights: Mapping[int, float], k: int, only: np.ndarray | None = None) -> list[tuple[int, float]]:
        """The ``k`` best live chunks for the question's term weights as ``(chunk_id, bm25)``,
        lower (more negative) is better, as FTS5's ``bm25()``; ties: lower id first.

        MaxScore (Turtle and Flood, 1995), exact: terms are added in the order of their largest
        possible contribution (idf x (k1 + 1)), each over its whole posting list, until the ones
        left could not lift a chunk they alone match past the k-th best score so far; those
        (common words: a term in more than half the chunks has idf 1e-6) are then added only to the
        chunks that can still reach the top k, found by binary search in their posting lists.

        With ``only``, the same over the filter's rows alone: the k-th best and the chunks that can
        still reach it are taken among them (a chunk outside is never a hit), so the bounds hold."""
        n = self.size
        if k <= 0 or not n or not weights:
            return []
        lists = self._postings(weights)
        if not lists:
            return []
        live = self._live
        if only is not None:
            keep = self._filter_mask(only)

            def live(rows: np.ndarray) -> np.ndarray:
                return rows[keep[rows]]

        lists.sort(key=lambda item: -item[0])
        bounds = [w * (K1 + 1) for w, _ in lists]
        left = [*np.cumsum(bounds[::-1])[::-1].tolist(), 0.0]  # the most lists[i:] can add to a chunk
        scores = np.zeros(len(self.ids), dtype=np.float64)
        done, threshold, candidates, checks = len(lists), 0.0, None, 0
        for i, (w, slices) in enumerate(lists):
            for rows, tf in slices:
                f = tf.astype(np.float64)
                scores[rows] += w * (f * (K1 + 1)) / (f + self.norm[rows])
            # Worth a look once what is left could add less than this term could: bounds shrink fast.
            if left[i + 1] == 0.0 or left[i + 1] > bounds[i] or checks >= MAX_PRUNING_CHECKS:
                continue
            touched = live(np.flatnonzero(scores))
            if len(touched) < k:
                continue
            checks += 1
            threshold = float(np.partition(scores[touched], len(touched) - k)[len(touched) - k])
            if left[i + 1] < threshold:  # a chunk only the remaining terms match scores below the k-th
                done = i + 1
                candidates = touched[scores[touched] + left[done] >= threshold]
                break
        if candidates is None:
            hits = live(np.flatnonzero(scores))
        else:
            hits = candidates
            for w, slices in lists[done:]:
                for rows, tf in slices:
                    at = np.minimum(np.searchsorted(rows, hits), len(rows) - 1)
                    found = rows[at] == hits
                    f = tf[at[found]].astype(np.float64)
                    matched = hits[found]
                    scores[matched] += w * (f * (K1 + 1)) / (f + self.norm[matched])
        if k < len(hits):
            hits = hits[np.argpartition(-scores[hits], k - 1)[:k]]
        ids = self.ids[hits]
        order = np.lexsort((ids, -scores[hits]))
        return [(int(ids[j]), -float(scores[hits[j]])) for j in order]

    def _filter_mask(self, only: np.ndarray) -> np.ndarray:
        """Which rows are live chunks of ``only``, kept for the next search with the same filter."""
        found = self._filter_masks.get(id(only))
        if found is not None and found[0] is only:
            return found[1]
        keep = np.zeros(len(self.ids), dtype=bool)
        keep[self._rows_of(only)] = True  # live rows only
        keep.setflags(write=False)
        if len(self._filter_masks) >= FILTER_MASKS:
            self._filter_masks.clear()
        self._filter_masks[id(only)] = (only, keep)  # holding ``only`` keeps its id from being reused
        return keep

    def _rows_of(self, chunk_ids: np.ndarray) -> np.ndarray:
        if not len(chunk_ids) or not self.size:
            return np.empty(0, dtype=np.int64)
        pos = np.minimum(np.searchsorted(self.sorted_ids, chunk_ids), self.size - 1)
        return self.sorted_rows[pos[self.sorted_ids[pos] == chunk_ids]]

    def idf(self, terms: Sequence[int]) -> dict[int, float]:
        """Each term's idf in the project (FTS5's formula and floor); terms no live chunk has are left out."""
        found: dict[int, float] = {}
        for term in dict.fromkeys(int(t) for t in terms):
            lists = self._postings({term: 1})
            if lists:
                found[term] = lists[0][0]
        return found

    def _postings(self, weights: Mapping[int, float]) -> list[tuple[float, list[tuple[np.ndarray, np.ndarray]]]]:
        """Each question term in the project as ``(idf x weight, [(rows, tf) per segment])``."""
        n = self.size
        terms = np.fromiter(weights, dtype=np.int64, count=len(weights))
        located = []
        for segment in self.segments:
            if not len(segment.terms):
                continue
            at = np.minimum(np.searchsorted(segment.terms, terms), len(segment.terms) - 1)
            located.append((segment, at, segment.terms[at] == terms))
        lists = []
        for i, term in enumerate(terms.tolist()):
            slices = []
            for s, at, found in located:
                if found[i]:
                    start, end = s.starts[at[i]], s.starts[at[i] + 1]
                    slices.append((s.rows[start:end], s.tf[start:end]))
            df = sum(len(rows) for rows, _ in slices)
            if self.dead is not None:
                df -= sum(int(np.count_nonzero(self.dead[rows])) for rows, _ in slices)
            if df > 0:
                idf = max(float(np.log((n - df + 0.5) / (df + 0.5))), MIN_IDF)
                lists.append((idf * weights[term], slices))
        return lists

    def _live(self, rows: np.ndarray) -> np.ndarray:
        return rows if self.dead is None else rows[~self.dead[rows]]


def _view(
    revision: int, segments: tuple[Segment, ...], ids: np.ndarray, lengths: np.ndarray, dead: np.ndarray | None
) -> View:
    rows = np.arange(len(ids), dtype=np.int64) if dead is None else np.flatnonzero(~dead)
    order = np.argsort(ids[rows], kind="stable")
    live_lengths = lengths[rows]
    average = float(live_lengths.mean()) if len(rows) else 1.0
    norm = K1 * (1 - B + B * lengths.astype(np.float64) / max(average, 1e-9))
    return View(revision, segments, ids, lengths, dead, ids[rows][order], rows[order], norm)


def _empty_view(revision: int) -> View:
    none = np.empty(0, dtype=np.int64)
    return _view(revision, (), none, np.empty(0, dtype=np.int32), None)


class ProjectIndex:
    """The in-memory keyword index of one project. Thread-safe; one per project per database."""

    def __init__(self, project_id: int) -> None:
        self.project_id = project_id
        self._lock = threading.Lock()
        self._view: View | None = None
        self.loads = 0  # full loads so far (tests and the benchmark read it)

    def view(self, db: Session) -> View:
        """The view to search for ``db``'s snapshot. It can be newer than the snapshot when another
        thread caught up first; retrieval only keeps chunks its own snapshot has."""
        conn = db.connection()
        first, last = _journal_bounds(conn, self.project_id)
        view = self._view
        if view is not None and view.revision == last:
            return view
        with self._lock:
            view = self._view
            if view is not None and view.revision == last:
                return view
            if last == 0:  # an empty journal: the project has never held a chunk, or is gone
                self._view = None
                return _empty_view(0)
            if view is not None and first is not None and first <= view.revision:
                if view.revision > last:
                    return view
                return self._catch_up(conn, view, last)
            return self._load(conn, last)

    def _load(self, conn: Connection, revision: int) -> View:
        words = tokenizer()
        ids: list[np.ndarray] = []
        parts: list[tuple[np.ndarray, np.ndarray]] = []
        lengths: list[np.ndarray] = []
        offset = 0
        result = conn.exec_driver_sql("SELECT id, text FROM chunks WHERE project_id = ?", (self.project_id,))
        for batch in result.partitions(LOAD_BATCH):
            docs, terms = words.encode([text for _, text in batch])
            ids.append(np.fromiter((cid for cid, _ in batch), dtype=np.int64, count=len(batch)))
            lengths.append(np.bincount(docs, minlength=len(batch)).astype(np.int32))
            parts.append((terms, docs + offset))
            offset += len(batch)
        all_terms = np.concatenate([t for t, _ in parts]) if parts else np.empty(0, dtype=np.int32)
        all_rows = np.concatenate([r for _, r in parts]) if parts else np.empty(0, dtype=np.int32)
        segment = _segment(all_terms, all_rows, np.ones(len(all_terms), dtype=np.int32), offset)
        del parts, all_terms, all_rows
        self.loads += 1
        id_array = np.concatenate(ids) if ids else np.empty(0, dtype=np.int64)
        length_array = np.concatenate(lengths) if lengths else np.empty(0, dtype=np.int32)
        return self._publish(_view(revision, (segment,), id_array, length_array, None))

    def _catch_up(self, conn: Connection, view: View, revision: int) -> View:
        changed = sorted(
            int(cid)
            for (cid,) in conn.exec_driver_sql(
                "SELECT DISTINCT chunk_id FROM keyword_journal WHERE project_id = ? AND seq > ? "
                "AND chunk_id IS NOT NULL",
                (self.project_id, view.revision),
            )
        )
        if len(changed) > max(256, view.size * RELOAD_FRACTION):
            return self._load(conn, revision)
        texts = _fetch(conn, self.project_id, changed)
        # Every changed chunk's old row dies; the ones that still exist get a new row.
        dead = np.zeros(len(view.ids), dtype=bool) if view.dead is None else view.dead.copy()
        wanted = np.asarray(changed, dtype=np.int64)
        if len(wanted) and view.size:
            pos = np.minimum(np.searchsorted(view.sorted_ids, wanted), view.size - 1)
            dead[view.sorted_rows[pos[view.sorted_ids[pos] == wanted]]] = True
        new_ids = np.asarray(sorted(texts), dtype=np.int64)
        segments = view.segments
        ids, lengths = view.ids, view.lengths
        if len(new_ids):
            docs, terms = tokenizer().encode([texts[int(i)] for i in new_ids])
            base = len(view.ids)
            delta = _segment(terms, docs + base, np.ones(len(terms), dtype=np.int32), base + len(new_ids))
            segments = (*segments, delta)
            ids = np.concatenate([ids, new_ids])
            lengths = np.concatenate([lengths, np.bincount(docs, minlength=len(new_ids)).astype(np.int32)])
            dead = np.concatenate([dead, np.zeros(len(new_ids), dtype=bool)])
        segments, ids, lengths, dead = _merged(segments, ids, lengths, dead)
        return self._publish(_view(revision, segments, ids, lengths, dead if dead.any() else None))

    def _publish(self, view: View) -> View:
        self._view = view
        return view


def _merged(
    segments: tuple[Segment, ...], ids: np.ndarray, lengths: np.ndarray, dead: np.ndarray
) -> tuple[tuple[Segment, ...], np.ndarray, np.ndarray, np.ndarray]:
    """Deltas merged into one; everything merged into one segment, dead rows dropped, when the
    deltas outgrow a share of the base or too many rows are dead."""
    if len(segments) <= 1:
        return segments, ids, lengths, dead
    base, deltas = segments[0], segments[1:]
    delta_postings = sum(s.postings for s in deltas)
    if delta_postings > MERGE_FRACTION * base.postings or dead.sum() > COMPACT_FRACTION * len(dead):
        live = ~dead
        renumber = np.cumsum(live) - 1
        parts = [s.expanded() for s in segments]
        terms = np.concatenate([t for t, _, _ in parts])
        rows = np.concatenate([r for _, r, _ in parts])
        tf = np.concatenate([f for _, _, f in parts])
        keep = live[rows]
        merged = _segment(terms[keep], renumber[rows[keep]].astype(np.int32), tf[keep], int(live.sum()))
        return (merged,), ids[live], lengths[live], np.zeros(int(live.sum()), dtype=bool)
    if len(deltas) > 1:
        parts = [s.expanded() for s in deltas]
        delta = _segment(
            np.concatenate([t for t, _, _ in parts]),
            np.concatenate([r for _, r, _ in parts]),
            np.concatenate([f for _, _, f in parts]),
            len(ids),
        )
        return (base, delta), ids, lengths, dead
    return segments, ids, lengths, dead


def _journal_bounds(conn: Connection, project_id: int) -> tuple[int | None, int]:
    """The project's first and last journal seq (0: an empty journal)."""
    # Scalar subqueries, each one index seek; min() and max() in one SELECT would scan the range.
    first, last = conn.exec_driver_sql(
        "SELECT (SELECT min(seq) FROM keyword_journal WHERE project_id = ?), "
        "(SELECT max(seq) FROM keyword_journal WHERE project_id = ?)",
        (project_id, project_id),
    ).one()
    return (None if first is None else int(first)), int(last or 0)


def _fetch(conn: Connection, project_id: int, chunk_ids: Sequence[int]) -> dict[int, str]:
    found: dict[int, str] = {}
    for start in range(0, len(chunk_ids), FETCH_BATCH):
        batch = tuple(chunk_ids[start : start + FETCH_BATCH])
        rows = conn.exec_driver_sql(
            f"SELECT id, text FROM chunks WHERE project_id = ? AND id IN ({','.join('?' * len(batch))})",
            (project_id, *batch),
        )
        found.update((int(cid), str(text)) for cid, text in rows)
    return found


# One registry per connection pool, i.e. per Database: the index lives exactly as long as the
# engine that reads the file, and two databases in one process never share one.
_registries: weakref.WeakKeyDictionary[object, dict[int, ProjectIndex]] = weakref.WeakKeyDictionary()
_registry_lock = threading.Lock()


def view_for(db: Session, project_id: int) -> View:
    """The current view of the project's index for ``db``'s snapshot (see :meth:`ProjectIndex.view`),
    remembered for the rest of the transaction (a snapshot does not change)."""
    # What a writing transaction sees may still roll back; it must not enter the shared index.
    views: dict[int, View] = read_snapshot_memo(db, "keyword_views", "keyword search")
    if project_id not in views:
        index = _index(db, project_id)
        views[project_id] = index.view(db)
        if index._view is None:  # the project is gone or has no chunks: forget its index
            indexes = _indexes(db)
            with _registry_lock:
                indexes.pop(project_id, None)
    return views[project_id]


def search(db: Session, project_id: int, text: str, limit: int) -> list[tuple[int, float]]:
    """The best chunks of the project for ``text`` as ``(chunk_id, bm25)`` (lower is better), best first."""
    weights = tokenizer().question(text)
    if not weights:
        return []
    return view_for(db, project_id).search(weights, int(limit))


def _index(db: Session, project_id: int) -> ProjectIndex:
    indexes = _indexes(db)
    with _registry_lock:
        index = indexes.get(project_id)
        if index is None:
            index = indexes[project_id] = ProjectIndex(project_id)
        return index


def _indexes(db: Session) -> dict[int, ProjectIndex]:
    bind = db.get_bind()
    pool = bind.engine.pool if isinstance(bind, Connection) else bind.pool
    with _registry_lock:
        return _registries.setdefault(pool, {})
