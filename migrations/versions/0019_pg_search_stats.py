"""PostgreSQL: each chunk's word count and each project's search statistics and revision, kept by the database

BM25 needs the project's chunk count and average chunk length; computing them from every chunk's
``tsvector`` on every search cost a second per SciFact query (issue 18, item 1). Now:

- ``chunks.text_words``: a stored generated column, the chunk's length as BM25 counts it (the last
  position in its ``tsvector``: FTS5 counts every token), by the immutable function
  ``ragchat_word_count``;
- ``project_search_stats(project_id, revision, chunks, words)``: one row per project that holds
  chunks, kept by statement-level triggers on ``chunks`` (insert, update, delete, cascades too) in
  the same transaction as the change. ``revision`` grows with every statement that changes the
  project's chunks, and with every write of their vectors (``app/rag/index/vector_store.put``): the
  retrieval result cache's key on PostgreSQL (``app/rag/search/query_cache.py``), read in the search's
  own snapshot, so servers sharing the database never serve a result older than their snapshot.

A project's chunk writers now update its one row: concurrent writers of one project queue on its
row lock until commit (READ COMMITTED: they wait, never fail). SQLite is untouched (its in-process
indexes keep their own statistics, its cache reads the journals).

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-25
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

CONFIG = "ragchat_english"  # migration 0004's text search configuration

# One statement's change per project: +1 chunk (and its words) per new row, -1 per old row.
_APPLY = """
    INSERT INTO project_search_stats AS s (project_id, revision, chunks, words)
    SELECT d.project_id, 1, sum(d.n), sum(d.w) FROM ({rows}) AS d
    WHERE d.project_id IN (SELECT id FROM projects)  -- a project being deleted has no row to keep
    GROUP BY d.project_id
    ON CONFLICT (project_id) DO UPDATE
    SET revision = s.revision + 1, chunks = s.chunks + excluded.chunks, words = s.words + excluded.words;
"""
_NEW = "SELECT project_id, 1 AS n, text_words::bigint AS w FROM new_rows"
_OLD = "SELECT project_id, -1 AS n, -text_words::bigint AS w FROM old_rows"

FUNCTION = f"""
CREATE FUNCTION ragchat_chunk_stats() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        {_APPLY.format(rows=_NEW)}
    ELSIF TG_OP = 'DELETE' THEN
        {_APPLY.format(rows=_OLD)}
    ELSE
        {_APPLY.format(rows=_NEW + " UNION ALL " + _OLD)}
    END IF;
    RETURN NULL;
END $$
"""

TRIGGERS = {
    "chunks_search_stats_ai": "AFTER INSERT ON chunks REFERENCING NEW TABLE AS new_rows",
    "chunks_search_stats_ad": "AFTER DELETE ON chunks REFERENCING OLD TABLE AS old_rows",
    "chunks_search_stats_au": "AFTER UPDATE ON chunks REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows",
}


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(
        "CREATE FUNCTION ragchat_word_count(tsvector) RETURNS integer LANGUAGE sql IMMUTABLE PARALLEL SAFE "
        "AS $$ SELECT coalesce(max(p), 0)::integer FROM unnest($1) AS u, unnest(u.positions) AS p $$"
    )
    # A generated column cannot read another (text_search): the tsvector is computed again here.
    op.execute(
        "ALTER TABLE chunks ADD COLUMN text_words integer "
        f"GENERATED ALWAYS AS (ragchat_word_count(to_tsvector('{CONFIG}', text))) STORED"
    )
    op.execute(
        "CREATE TABLE project_search_stats ("
        "project_id integer PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE, "
        "revision bigint NOT NULL, chunks bigint NOT NULL, words bigint NOT NULL)"  # no CHECK: the upsert's
        # proposed row carries a negative change (a delete's), and PostgreSQL checks it before the conflict
    )
    op.execute(
        "INSERT INTO project_search_stats(project_id, revision, chunks, words) "
        "SELECT project_id, 1, count(*), coalesce(sum(text_words), 0) FROM chunks GROUP BY project_id"
    )
    op.execute(FUNCTION)
    for name, when in TRIGGERS.items():
        op.execute(f"CREATE TRIGGER {name} {when} FOR EACH STATEMENT EXECUTE FUNCTION ragchat_chunk_stats()")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for name in TRIGGERS:
        op.execute(f"DROP TRIGGER IF EXISTS {name} ON chunks")
    op.execute("DROP FUNCTION IF EXISTS ragchat_chunk_stats()")
    op.execute("DROP TABLE IF EXISTS project_search_stats")
    op.execute("ALTER TABLE chunks DROP COLUMN IF EXISTS text_words")
    op.execute("DROP FUNCTION IF EXISTS ragchat_word_count(tsvector)")
