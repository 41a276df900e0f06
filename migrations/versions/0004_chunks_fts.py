"""FTS5 keyword index over chunk text, kept in sync with `chunks` by triggers

External-content table: the text is stored once (in `chunks`), the index references it by rowid.
Porter stemming over unicode61 with diacritics folded: the tokenizer BM25 baselines use.
On PostgreSQL: a stored generated ``tsvector`` column with a GIN index instead, in a text search
configuration made to tokenise like FTS5: english's parser and snowball stemmer (Porter2), but no
stop words (FTS5 indexes every word; BM25's idf already makes common words weigh little).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


# The generated column PostgreSQL keeps from `chunks.text`; the ORM does not model it.
PG_COLUMN = "text_search"
PG_CONFIG = "ragchat_english"  # app/rag/index/pg_rankings.py tokenises questions with it
PG_MAPPED = "asciiword, asciihword, hword_asciipart, word, hword, hword_part"


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"CREATE TEXT SEARCH DICTIONARY {PG_CONFIG}_stem (TEMPLATE = snowball, Language = english)")
        op.execute(f"CREATE TEXT SEARCH CONFIGURATION {PG_CONFIG} (COPY = english)")
        op.execute(f"ALTER TEXT SEARCH CONFIGURATION {PG_CONFIG} ALTER MAPPING FOR {PG_MAPPED} WITH {PG_CONFIG}_stem")
        op.execute(
            f"ALTER TABLE chunks ADD COLUMN {PG_COLUMN} tsvector "
            f"GENERATED ALWAYS AS (to_tsvector('{PG_CONFIG}', text)) STORED"
        )
        op.execute(f"CREATE INDEX ix_chunks_text_search ON chunks USING gin ({PG_COLUMN})")
        return
    op.execute(
        "CREATE VIRTUAL TABLE chunks_fts USING fts5("
        "text, content='chunks', content_rowid='id', "
        "tokenize='porter unicode61 remove_diacritics 2')"
    )
    op.execute(
        "CREATE TRIGGER chunks_fts_ai AFTER INSERT ON chunks BEGIN "
        "INSERT INTO chunks_fts(rowid, text) VALUES (new.id, new.text); END"
    )
    op.execute(
        "CREATE TRIGGER chunks_fts_ad AFTER DELETE ON chunks BEGIN "
        "INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', old.id, old.text); END"
    )
    op.execute(
        "CREATE TRIGGER chunks_fts_au AFTER UPDATE OF text ON chunks BEGIN "
        "INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', old.id, old.text); "
        "INSERT INTO chunks_fts(rowid, text) VALUES (new.id, new.text); END"
    )
    # Index whatever chunks already exist.
    op.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP INDEX IF EXISTS ix_chunks_text_search")
        op.execute(f"ALTER TABLE chunks DROP COLUMN IF EXISTS {PG_COLUMN}")
        op.execute(f"DROP TEXT SEARCH CONFIGURATION IF EXISTS {PG_CONFIG}")
        op.execute(f"DROP TEXT SEARCH DICTIONARY IF EXISTS {PG_CONFIG}_stem")
        return
    op.execute("DROP TRIGGER IF EXISTS chunks_fts_au")
    op.execute("DROP TRIGGER IF EXISTS chunks_fts_ad")
    op.execute("DROP TRIGGER IF EXISTS chunks_fts_ai")
    op.execute("DROP TABLE IF EXISTS chunks_fts")
