"""PostgreSQL: chunks are tokenised as FTS5 tokenises them (every run of letters and digits a word)

PostgreSQL's parser keeps what FTS5's unicode61 tokenizer splits: "PD-1" gave 'pd' and '-1' (a
signed integer), "bio-materials" gave the compound 'bio-materi' besides its parts (a position
more), "3.5" a float, "mg/kg" a file name. The question's words are FTS5's ("pd", "1"), so such
words never matched, and compounds made chunks look longer than FTS5 counts them: SciFact train
keyword nDCG@10 was 0.011 below SQLite's (docs/BENCHMARKS.md). Now every character that is not a
letter or digit becomes a space before the parser sees the text, so the parser's words are FTS5's
tokens. ``text_search`` and ``text_words`` are recomputed (dropped and added again: a table rewrite)
with their GIN index; the per-project word counts follow. SQLite is untouched.

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-25
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

CONFIG = "ragchat_english"
FTS5_WORDS = "regexp_replace(text, '[^[:alnum:]]+', ' ', 'g')"


def _columns(source: str) -> None:
    op.execute("DROP INDEX IF EXISTS ix_chunks_text_search")
    op.execute("ALTER TABLE chunks DROP COLUMN text_words, DROP COLUMN text_search")
    op.execute(
        f"ALTER TABLE chunks ADD COLUMN text_search tsvector GENERATED ALWAYS AS (to_tsvector('{CONFIG}', {source})) "
        f"STORED, ADD COLUMN text_words integer "
        f"GENERATED ALWAYS AS (ragchat_word_count(to_tsvector('{CONFIG}', {source}))) STORED"
    )
    op.execute("CREATE INDEX ix_chunks_text_search ON chunks USING gin (text_search)")
    op.execute(
        "UPDATE project_search_stats s SET words = c.words, revision = s.revision + 1 FROM "
        "(SELECT project_id, coalesce(sum(text_words), 0) AS words FROM chunks GROUP BY project_id) c "
        "WHERE c.project_id = s.project_id"
    )


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _columns(FTS5_WORDS)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _columns("text")
