"""PostgreSQL: each project's document frequency of every lexeme, kept by the database

Keyword search on PostgreSQL scored every chunk holding any question word and counted each word's
document frequency (df) from those same rows, so a question with "of" or "the" scored nearly every
chunk of the project: 14 s a question at 500k chunks (issue 18). With each lexeme's df known before
the search, BM25 bounds what each word can add and scores only the chunks of the words that can
still change the top k (MaxScore, ``app/rag/index/pg_rankings.py``); the common words' postings are never
read.

- ``project_search_terms(project_id, lexeme, chunks, tf_max, words_per_tf_min)``: how many of the
  project's chunks hold the lexeme (in ``chunks.text_search``), a row for every lexeme some chunk of
  the project holds and none for the others; and, over the chunks holding it, the largest term
  frequency and the smallest length (``text_words``) per occurrence, which bound what the lexeme
  can add to a chunk's BM25 far more tightly than k1 + 1 does. These two only ever widen (a chunk
  leaving does not narrow them): still bounds, if looser after deletes. A later migration that
  rewrites ``text_search`` must recompute them. Kept by statement-level triggers on ``chunks``
  (insert, update of the text, delete, cascades too) in the same transaction as the change, like
  migration 0019's ``project_search_stats``. Their names sort after 0019's, so PostgreSQL fires them after it: a
  project's writers already queue on its ``project_search_stats`` row before touching these.

Derived data only: the upgrade computes it from the chunks, the downgrade drops it. SQLite is
untouched (its in-process index keeps its own postings).

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-25
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# One statement's change per (project, lexeme): +1 per new row holding it, -1 per old row, and the
# new rows' largest tf and smallest length per tf folded in (an old row's leaving keeps them: a bound
# stays a bound); rows whose count reaches 0 are deleted. A project being deleted keeps no rows.
_APPLY = """
    WITH changed AS (
        SELECT d.project_id, u.lexeme, sum(d.n) AS n,
               coalesce(max(coalesce(array_length(u.positions, 1), 1)) FILTER (WHERE d.n > 0), 0) AS tf_max,
               coalesce(min(d.words::float8 / coalesce(array_length(u.positions, 1), 1)) FILTER (WHERE d.n > 0),
                        'Infinity') AS words_per_tf_min
        FROM ({rows}) AS d, unnest(d.text_search) AS u
        WHERE d.project_id IN (SELECT id FROM projects)
        GROUP BY d.project_id, u.lexeme
    ), kept AS (
        INSERT INTO project_search_terms AS s (project_id, lexeme, chunks, tf_max, words_per_tf_min)
        SELECT project_id, lexeme, n, tf_max, words_per_tf_min FROM changed ORDER BY project_id, lexeme
        ON CONFLICT (project_id, lexeme) DO UPDATE SET chunks = s.chunks + excluded.chunks,
            tf_max = greatest(s.tf_max, excluded.tf_max),
            words_per_tf_min = least(s.words_per_tf_min, excluded.words_per_tf_min)
        RETURNING s.project_id, s.lexeme, s.chunks
    )
    SELECT array_agg(project_id), array_agg(lexeme) INTO gone_projects, gone_lexemes FROM kept WHERE chunks <= 0;
    IF gone_projects IS NOT NULL THEN
        DELETE FROM project_search_terms s USING unnest(gone_projects, gone_lexemes) AS g(project_id, lexeme)
        WHERE s.project_id = g.project_id AND s.lexeme = g.lexeme AND s.chunks <= 0;
    END IF;
"""
_POSTINGS_IN = """
    INSERT INTO chunk_terms (project_id, lexeme, chunk_id, tf, words)
    SELECT d.project_id, u.lexeme, d.id, coalesce(array_length(u.positions, 1), 1), d.words
    FROM ({rows}) AS d, unnest(d.text_search) AS u
    WHERE d.project_id IN (SELECT id FROM projects);
"""
_POSTINGS_OUT = """
    DELETE FROM chunk_terms t
    USING (
        SELECT d.project_id, u.lexeme, d.id FROM ({rows}) AS d, unnest(tsvector_to_array(d.text_search)) AS u(lexeme)
    ) AS o
    WHERE t.project_id = o.project_id AND t.lexeme = o.lexeme AND t.chunk_id = o.id;
"""
_NEW = "SELECT id, project_id, text_search, text_words AS words, 1 AS n FROM new_rows"
_OLD = "SELECT id, project_id, text_search, text_words AS words, -1 AS n FROM old_rows"
# An update counts only the rows whose text (or project) changed: re-chunking moves positions of
# reused chunks without touching their text.
_CHANGED_NEW = """
    SELECT n.id, n.project_id, n.text_search, n.text_words AS words, 1 AS n
    FROM new_rows n LEFT JOIN old_rows o ON o.id = n.id
    WHERE o.id IS NULL OR o.project_id <> n.project_id OR o.text_search <> n.text_search
"""
_CHANGED_OLD = """
    SELECT o.id, o.project_id, o.text_search, o.text_words AS words, -1 AS n
    FROM old_rows o LEFT JOIN new_rows n ON n.id = o.id
    WHERE n.id IS NULL OR o.project_id <> n.project_id OR o.text_search <> n.text_search
"""

FUNCTION = f"""
CREATE FUNCTION ragchat_chunk_terms() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    gone_projects integer[];
    gone_lexemes text[];
BEGIN
    IF TG_OP = 'INSERT' THEN
        {_APPLY.format(rows=_NEW)}
        {_POSTINGS_IN.format(rows=_NEW)}
    ELSIF TG_OP = 'DELETE' THEN
        {_APPLY.format(rows=_OLD)}
        {_POSTINGS_OUT.format(rows=_OLD)}
    ELSE
        {_APPLY.format(rows=_CHANGED_NEW + " UNION ALL " + _CHANGED_OLD)}
        {_POSTINGS_OUT.format(rows=_CHANGED_OLD)}
        {_POSTINGS_IN.format(rows=_CHANGED_NEW)}
    END IF;
    RETURN NULL;
END $$
"""

TRIGGERS = {
    "chunks_search_terms_ai": "AFTER INSERT ON chunks REFERENCING NEW TABLE AS new_rows",
    "chunks_search_terms_ad": "AFTER DELETE ON chunks REFERENCING OLD TABLE AS old_rows",
    "chunks_search_terms_au": "AFTER UPDATE ON chunks REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows",
}


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(
        "CREATE TABLE project_search_terms ("
        "project_id integer NOT NULL REFERENCES projects(id) ON DELETE CASCADE, "
        "lexeme text NOT NULL, chunks bigint NOT NULL, "  # no CHECK: a delete's upsert proposes a negative row
        "tf_max integer NOT NULL, words_per_tf_min double precision NOT NULL, "
        "PRIMARY KEY (project_id, lexeme))"
    )
    op.execute(
        "INSERT INTO project_search_terms(project_id, lexeme, chunks, tf_max, words_per_tf_min) "
        "SELECT c.project_id, u.lexeme, count(*), max(coalesce(array_length(u.positions, 1), 1)), "
        "min(c.text_words::float8 / coalesce(array_length(u.positions, 1), 1)) "
        "FROM chunks c, unnest(c.text_search) AS u GROUP BY c.project_id, u.lexeme ORDER BY c.project_id, u.lexeme"
    )
    op.execute(
        "CREATE TABLE chunk_terms ("
        "project_id integer NOT NULL REFERENCES projects(id) ON DELETE CASCADE, "
        "lexeme text NOT NULL, chunk_id integer NOT NULL, tf integer NOT NULL, words integer NOT NULL)"
    )
    op.execute(
        "INSERT INTO chunk_terms(project_id, lexeme, chunk_id, tf, words) "
        "SELECT c.project_id, u.lexeme, c.id, coalesce(array_length(u.positions, 1), 1), c.text_words "
        "FROM chunks c, unnest(c.text_search) AS u ORDER BY c.project_id, u.lexeme, c.id"
    )
    # The key (a covering index: a search reads postings from it alone) is built after the rows: faster.
    op.execute("ALTER TABLE chunk_terms ADD PRIMARY KEY (project_id, lexeme, chunk_id) INCLUDE (tf, words)")
    op.execute(FUNCTION)
    for name, when in TRIGGERS.items():
        op.execute(f"CREATE TRIGGER {name} {when} FOR EACH STATEMENT EXECUTE FUNCTION ragchat_chunk_terms()")
    op.execute("ANALYZE project_search_terms")
    op.execute("ANALYZE chunk_terms")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for name in TRIGGERS:
        op.execute(f"DROP TRIGGER IF EXISTS {name} ON chunks")
    op.execute("DROP FUNCTION IF EXISTS ragchat_chunk_terms()")
    op.execute("DROP TABLE IF EXISTS chunk_terms")
    op.execute("DROP TABLE IF EXISTS project_search_terms")
