"""PostgreSQL keyword search by MaxScore (issue 18): the pruned search returns exactly what the
exhaustive one does (same ids in the same order, same scores up to float rounding) while scoring
fewer chunks, on corpora built so that pruning is easy to get wrong: common words in every chunk,
questions whose rare words are in few chunks, ties across the k-th place, weights. Migration 0022's
statistics and postings follow every chunk write. PostgreSQL only: needs --backends to name
postgresql (make test does)."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator

import pytest
from sqlalchemy import text

from app.db import migrate
from app.db.database import Database
from app.rag.index import keyword_index, pg_rankings
from app.settings import Settings
from tests import backends

COMMON = ("the", "of", "and", "in", "a", "to", "is", "with")
# Porter and snowball agree on these stems; the rarer ones come later in the list (Zipf below).
VOCABULARY = (
    "cell protein gene tumour virus membrane enzyme receptor patient blood liver kidney heart brain "
    "neuron muscle bone skin lung insulin glucose kinase antibody vaccine plasma serum mouse rat "
    "zebrafish yeast bacteria fungus parasite malaria dengue measles rabies cholera typhoid leprosy "
    "anthrax smallpox tetanus pertussis diphtheria rubella mumps polio hepatitis influenza"
).split()


@pytest.fixture
def store(request: pytest.FixtureRequest) -> Iterator[Database]:
    if backends.POSTGRESQL not in backends.parse(request.config.getoption("--backends")):
        pytest.skip("PostgreSQL's keyword search: run with --backends=sqlite,postgresql")
    server: backends.PostgresServer = request.getfixturevalue("postgres_server")
    url = server.create()
    migrate.upgrade(url, default_threshold=Settings().rag.threshold)
    built = Database.from_url(url)
    try:
        yield built
    finally:
        built.dispose()
        server.drop(url)


def _project(db_store: Database, name: str) -> int:
    with db_store.write() as db:
        return int(
            db.execute(
                text(
                    "INSERT INTO projects(name, description, created_at, updated_at) VALUES (:n, '', now(), now()) RETURNING id"
                ),
                {"n": name},
            ).scalar_one()
        )


def _add(db_store: Database, project: int, texts: list[str], name: str = "doc") -> list[int]:
    """One document of ``texts`` (one chunk each) in ``project``, in one statement: the chunk ids."""
    with db_store.write() as db:
        document = db.execute(
            text(
                "INSERT INTO documents(project_id, name, kind, size_bytes, content_hash, status, chunk_count, "
                "ingested_at, created_at, updated_at) VALUES (:p, :n, 'text', 1, :n, 'ready', :c, now(), now(), now()) "
                "RETURNING id"
            ),
            {"p": project, "n": name, "c": len(texts)},
        ).scalar_one()
        rows = db.execute(
            text(
                "INSERT INTO chunks(document_id, project_id, ordinal, text, content_hash, token_count, char_start, "
                "char_end, line_start, line_end, heading_path) "
                "SELECT :d, :p, t.ordinality - 1, t.body, 'h', 1, 0, 1, 1, 1, '' "
                "FROM unnest(CAST(:texts AS text[])) WITH ORDINALITY AS t(body, ordinality) ORDER BY t.ordinality "
                "RETURNING id"
            ),
            {"d": document, "p": project, "texts": texts},
        ).all()
    return sorted(int(r[0]) for r in rows)


def _corpus(rng: random.Random, n: int) -> list[str]:
    """Chunks of 5-120 words: common words everywhere (several times each), the vocabulary by Zipf."""
    weights = [1 / (i + 1) ** 1.1 for i in range(len(VOCABULARY))]
    out = []
    for _ in range(n):
        length = rng.randint(5, 120)
        words = [
            rng.choice(COMMON) if rng.random() < 0.5 else rng.choices(VOCABULARY, weights)[0] for _ in range(length)
        ]
        out.append(" ".join(words))
    return out


def _questions(rng: random.Random, count: int) -> list[dict[int, float]]:
    tokenizer = keyword_index.tokenizer()
    out = []
    for _ in range(count):
        words = rng.sample(COMMON, 3) + rng.sample(VOCABULARY, rng.randint(1, 4))
        out.append({term: float(w) for term, w in tokenizer.question(" ".join(words)).items()})
    return out


def _both(db_store: Database, project: int, weights: dict[int, float], k: int) -> tuple[list, list, object]:  # type: ignore[type-arg]
    with db_store.read() as db:
        ranking = pg_rankings.PgKeywordRanking(db, project)
        exhaustive = ranking.exhaustive_search(weights, k)
        matched = ranking.scored
        pruned = ranking.search(weights, k)
        return pruned, exhaustive, (ranking.passes, ranking.candidates, ranking.scored, matched)


def _same(pruned: list[tuple[int, float]], exhaustive: list[tuple[int, float]]) -> None:
    assert [cid for cid, _ in pruned] == [cid for cid, _ in exhaustive]
    assert [s for _, s in pruned] == pytest.approx([s for _, s in exhaustive], rel=1e-12, abs=1e-15)


def test_pruned_search_is_the_exhaustive_one_and_scores_fewer_chunks(store: Database) -> None:
    rng = random.Random(18)
    project = _project(store, "zipf")
    _add(store, project, _corpus(rng, 600))
    fewer = 0
    for weights in _questions(rng, 25):
        for k in (1, 7, 50, 10_000):  # 10,000: more than the chunks that match
            pruned, exhaustive, (passes, candidates, scored, matched) = _both(store, project, weights, k)
            _same(pruned, exhaustive)
            assert exhaustive and passes >= 1
            if k == 10_000:
                assert len(pruned) == matched  # every matching chunk, in order
            elif scored < matched and candidates < matched:
                fewer += 1
    assert fewer >= 40  # the common words' postings were not read, most chunks not scored


def test_a_word_in_every_chunk_weights_and_a_zero_weight(store: Database) -> None:
    rng = random.Random(7)
    project = _project(store, "everywhere")
    _add(store, project, [f"ragchat {body}" for body in _corpus(rng, 300)])
    tokenizer = keyword_index.tokenizer()
    (everywhere,) = tokenizer.question("ragchat")
    (rare,) = tokenizer.question("leprosy")
    (medium,) = tokenizer.question("liver")
    for weights in (
        {everywhere: 1.0},  # idf at the floor: every chunk scores, by length
        {everywhere: 1.0, rare: 1.0},
        {everywhere: 2.5, rare: 0.35, medium: 1.7},  # query expansion's fractional weights
        {everywhere: 1.0, rare: 0.0, medium: 0.2},  # a weight of zero scores 0 where it matches
        {rare: 0.0},
    ):
        for k in (1, 3, 20, 1000):
            pruned, exhaustive, _ = _both(store, project, weights, k)
            _same(pruned, exhaustive)


def test_ties_across_the_kth_place_keep_the_lower_ids(store: Database) -> None:
    """Twenty copies of each of a few texts: equal scores straddle every k; the lower ids come first."""
    rng = random.Random(3)
    project = _project(store, "ties")
    bodies = _corpus(rng, 40)
    ids = _add(store, project, [bodies[i % len(bodies)] for i in range(800)])
    for weights in _questions(rng, 15):
        for k in (5, 19, 20, 21, 33, 60):
            pruned, exhaustive, _ = _both(store, project, weights, k)
            _same(pruned, exhaustive)
            scores = [s for _, s in pruned]
            for (a, sa), (b, sb) in itertools.pairwise(pruned):
                assert sa < sb or (sa == sb and a < b)
            assert len(set(scores)) < len(scores) or len(pruned) < 2
    assert len(ids) == 800


def test_a_wrong_bound_would_be_caught(store: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the bound of what the other lexemes can add taken as nothing (pruning too early: the
    k-th score taken from too few chunks), the results differ from the exhaustive search's on this
    corpus: the tests above would see a wrong pruning."""
    rng = random.Random(18)
    project = _project(store, "zipf")
    _add(store, project, _corpus(rng, 600))
    questions = _questions(rng, 25)
    monkeypatch.setattr(pg_rankings, "_tf_part_bound", lambda *_: 0.0)
    monkeypatch.setattr(pg_rankings, "ESSENTIAL_POSTINGS", 0.0)
    wrong = 0
    for weights in questions:
        pruned, exhaustive, _ = _both(store, project, weights, 10)
        wrong += [cid for cid, _ in pruned] != [cid for cid, _ in exhaustive]
    assert wrong >= 5


def test_another_projects_chunks_change_nothing(store: Database) -> None:
    rng = random.Random(11)
    a, b = _project(store, "a"), _project(store, "b")
    _add(store, a, _corpus(rng, 300))
    questions = _questions(rng, 10)
    with store.read() as db:
        before = [pg_rankings.PgKeywordRanking(db, a).search(w, 10) for w in questions]
    b_ids = set(_add(store, b, _corpus(rng, 300) + [" ".join(VOCABULARY)] * 50))
    with store.read() as db:
        after = [pg_rankings.PgKeywordRanking(db, a).search(w, 10) for w in questions]
        in_b = [pg_rankings.PgKeywordRanking(db, b).search(w, 10) for w in questions]
    assert after == before
    assert all(cid in b_ids for hits in in_b for cid, _ in hits) and any(in_b)
    for weights in questions:
        pruned, exhaustive, _ = _both(store, b, weights, 10)
        _same(pruned, exhaustive)


def test_a_writers_transaction_searches_exhaustively(store: Database) -> None:
    """READ COMMITTED statements each see newer rows: a search there runs as one statement."""
    rng = random.Random(5)
    project = _project(store, "writer")
    _add(store, project, _corpus(rng, 200))
    weights = _questions(rng, 1)[0]
    with store.write() as db:
        ranking = pg_rankings.PgKeywordRanking(db, project)
        hits = ranking.search(weights, 10)
        assert ranking.passes == 1 and ranking.candidates == ranking.scored
    with store.read() as db:
        assert pg_rankings.PgKeywordRanking(db, project).exhaustive_search(weights, 10) == hits


def _statistics(db_store: Database, project: int) -> tuple[dict, dict, dict]:  # type: ignore[type-arg]
    """Kept: lexeme -> (df, tf_max, words_per_tf_min) and the postings; recomputed from the chunks."""
    with db_store.read() as db:
        kept = {
            str(lex): (int(df), int(tf), float(per))
            for lex, df, tf, per in db.execute(
                text("SELECT lexeme, chunks, tf_max, words_per_tf_min FROM project_search_terms WHERE project_id = :p"),
                {"p": project},
            )
        }
        postings = {
            (str(lex), int(cid)): (int(tf), int(words))
            for lex, cid, tf, words in db.execute(
                text("SELECT lexeme, chunk_id, tf, words FROM chunk_terms WHERE project_id = :p"), {"p": project}
            )
        }
        actual = {
            (str(lex), int(cid)): (int(tf), int(words))
            for lex, cid, tf, words in db.execute(
                text(
                    "SELECT u.lexeme, c.id, array_length(u.positions, 1), c.text_words FROM chunks c, "
                    "unnest(c.text_search) u WHERE c.project_id = :p"
                ),
                {"p": project},
            )
        }
    return kept, postings, actual


def _check(db_store: Database, project: int, *, exact_bounds: bool) -> None:
    kept, postings, actual = _statistics(db_store, project)
    assert postings == actual
    df: dict[str, int] = {}
    tf_max: dict[str, int] = {}
    per_min: dict[str, float] = {}
    for (lex, _), (tf, words) in actual.items():
        df[lex] = df.get(lex, 0) + 1
        tf_max[lex] = max(tf_max.get(lex, 0), tf)
        per_min[lex] = min(per_min.get(lex, float("inf")), words / tf)
    assert {lex: v[0] for lex, v in kept.items()} == df  # no row for a lexeme no chunk holds
    for lex, (_, tf, per) in kept.items():
        if exact_bounds:
            assert (tf, per) == (tf_max[lex], pytest.approx(per_min[lex]))
        else:  # a chunk leaving does not narrow them: still bounds
            assert tf >= tf_max[lex] and per <= per_min[lex] + 1e-12


def test_statistics_and_postings_follow_every_chunk_write(store: Database) -> None:
    rng = random.Random(2)
    a, b = _project(store, "a"), _project(store, "b")
    _add(store, a, _corpus(rng, 120), "one")
    _add(store, b, _corpus(rng, 50), "other")
    _check(store, a, exact_bounds=True)
    _add(store, a, ["leprosy leprosy leprosy cholera", "rabies"], "two")
    _check(store, a, exact_bounds=True)
    with store.write() as db:
        # The text of some chunks changes, others only move (their text is the same).
        db.execute(
            text("UPDATE chunks SET text = 'smallpox and the tetanus' WHERE project_id = :p AND id % 3 = 0"), {"p": a}
        )
        db.execute(text("UPDATE chunks SET char_start = 5 WHERE project_id = :p AND id % 3 = 1"), {"p": a})
    _check(store, a, exact_bounds=False)
    with store.write() as db:
        db.execute(text("DELETE FROM documents WHERE project_id = :p AND name = 'two'"), {"p": a})  # cascades
        db.execute(text("DELETE FROM chunks WHERE project_id = :p AND id % 5 = 0"), {"p": a})
    _check(store, a, exact_bounds=False)
    _check(store, b, exact_bounds=True)
    for weights in _questions(rng, 10):
        pruned, exhaustive, _ = _both(store, a, weights, 10)
        _same(pruned, exhaustive)
    with store.write() as db:
        db.execute(text("DELETE FROM projects WHERE id = :p"), {"p": a})
    with store.read() as db:
        for table in ("project_search_terms", "chunk_terms"):
            projects = {int(r[0]) for r in db.execute(text(f"SELECT DISTINCT project_id FROM {table}"))}
            assert projects == {b}
    _check(store, b, exact_bounds=True)
