"""conversational retrieval: chat sessions choose a search quality and whether follow-ups are rewritten

``quality`` (quick, balanced, thorough) bounds the retrieval passes of evaluate-and-widen;
``rewrite`` (off, on, auto) whether the chat model rewrites a follow-up into a standalone query
(issue 15, items 4 and 7). Existing sessions get the defaults, balanced and auto; a session's other
columns and every row are kept. Downgrading drops the two columns (nothing else refers to them).

Both ways rebuild the table, which would reseed its AUTOINCREMENT counter at max(id): the counter
is carried over, so the id of a session deleted before the migration is not handed out again.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-25
"""

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


@contextmanager
def _keeping_ids() -> Iterator[None]:
    """Around a rebuild of chat_sessions: its AUTOINCREMENT counter as it was (never lower)."""
    conn = op.get_bind()
    if conn.dialect.name != "sqlite":
        yield  # a PostgreSQL sequence is untouched by ALTER TABLE
        return
    seq = conn.exec_driver_sql("SELECT seq FROM sqlite_sequence WHERE name = 'chat_sessions'").scalar()
    yield
    if seq is not None:
        conn.exec_driver_sql("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'chat_sessions'", (int(seq),))


def upgrade() -> None:
    # The rebuilt table keeps AUTOINCREMENT (0008): without it ids would be reused again.
    with _keeping_ids(), op.batch_alter_table("chat_sessions", table_kwargs={"sqlite_autoincrement": True}) as batch:
        batch.add_column(sa.Column("quality", sa.String(20), nullable=False, server_default=sa.text("'balanced'")))
        batch.add_column(sa.Column("rewrite", sa.String(20), nullable=False, server_default=sa.text("'auto'")))
        batch.create_check_constraint("ck_chat_sessions_quality", "quality IN ('quick', 'balanced', 'thorough')")
        batch.create_check_constraint("ck_chat_sessions_rewrite", "rewrite IN ('off', 'on', 'auto')")


def downgrade() -> None:
    with _keeping_ids(), op.batch_alter_table("chat_sessions", table_kwargs={"sqlite_autoincrement": True}) as batch:
        batch.drop_constraint("ck_chat_sessions_rewrite", type_="check")
        batch.drop_constraint("ck_chat_sessions_quality", type_="check")
        batch.drop_column("rewrite")
        batch.drop_column("quality")
