"""citations' foreign keys are checked at commit, so deleting a project with cited answers works on PostgreSQL

Deleting a project reaches a citation by two cascades: through its message (ON DELETE CASCADE) and
through its chunk and document (ON DELETE SET NULL). PostgreSQL runs the two SET NULL updates on the
row one after the other; the second updates a row version written by this transaction, so it
re-checks every foreign key of the row, including ``message_id`` whose message is already gone,
and the delete fails (found by tests/db/test_migrations_both_backends.py). Checked at commit, the
citation row is gone by then and nothing fails. SQLite gets the same keys (one schema on both;
its table is rebuilt, keeping every row and its AUTOINCREMENT counter).

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-25
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

KEYS = {
    "message_id": ("citations_message_id_fkey", "chat_messages.id", "CASCADE"),
    "chunk_id": ("citations_chunk_id_fkey", "chunks.id", "SET NULL"),
    "document_id": ("citations_document_id_fkey", "documents.id", "SET NULL"),
}


def _citations(deferred: bool) -> sa.Table:
    """The citations table as of 0016, its keys checked at commit or not (SQLite's rebuild)."""
    when = {"deferrable": True, "initially": "DEFERRED"} if deferred else {}

    def key(column: str) -> sa.ForeignKey:
        _, target, action = KEYS[column]
        return sa.ForeignKey(target, ondelete=action, **when)

    return sa.Table(
        "citations",
        sa.MetaData(),
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("message_id", sa.Integer(), key("message_id"), nullable=False),
        sa.Column("chunk_id", sa.Integer(), key("chunk_id"), nullable=True),
        sa.Column("document_id", sa.Integer(), key("document_id"), nullable=True),
        sa.Column("marker", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("rank", sa.Integer(), nullable=False),
        sa.Column("document_name", sa.String(1000), nullable=False),
        sa.Column("location", sa.JSON(), nullable=False),
        sa.Column("snippet", sa.Text(), nullable=False),
        sa.CheckConstraint("kind IN ('model', 'attributed', 'extracted')", name="ck_citations_kind"),
        sa.Index("ix_citations_message_id", "message_id"),
        sqlite_autoincrement=True,
    )


def _set(deferred: bool) -> None:
    conn = op.get_bind()
    if conn.dialect.name == "postgresql":
        clause = "DEFERRABLE INITIALLY DEFERRED" if deferred else "NOT DEFERRABLE"
        for name, _, _ in KEYS.values():
            op.execute(f"ALTER TABLE citations ALTER CONSTRAINT {name} {clause}")
        return
    seq = conn.exec_driver_sql("SELECT seq FROM sqlite_sequence WHERE name = 'citations'").scalar()
    with op.batch_alter_table("citations", recreate="always", copy_from=_citations(deferred)):
        pass
    if seq is not None:
        conn.exec_driver_sql("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'citations'", (int(seq),))


def upgrade() -> None:
    _set(deferred=True)


def downgrade() -> None:
    _set(deferred=False)
