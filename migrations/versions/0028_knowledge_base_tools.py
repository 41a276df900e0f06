"""Tools of a knowledge base: ``tools.project_id``

A tool is the server's (``project_id`` NULL: defined by administrators and operator keys, seen by
everyone signed in, callable from any chat that allows its group) or one knowledge base's (defined
by its editors, seen by its members, callable only from that knowledge base's chats). Deleting the
knowledge base deletes its tools. **Every tool that exists before this revision is the server's**,
as it was.

Downgrading drops the column: the knowledge bases' tools become the server's.

Revision ID: 0028
Revises: 0027
Create Date: 2026-11-28
"""

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import sqlalchemy as sa
from alembic import op

revision: str = "0028"
down_revision: str | None = "0027"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


@contextmanager
def _keeping_ids() -> Iterator[None]:
    """Around a rebuild of tools: its AUTOINCREMENT counter as it was (never lower)."""
    conn = op.get_bind()
    if conn.dialect.name != "sqlite":
        yield
        return
    seq = conn.exec_driver_sql("SELECT seq FROM sqlite_sequence WHERE name = 'tools'").scalar()
    yield
    if seq is not None:
        conn.exec_driver_sql("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'tools'", (int(seq),))


def upgrade() -> None:
    with _keeping_ids(), op.batch_alter_table("tools", table_kwargs={"sqlite_autoincrement": True}) as batch:
        batch.add_column(sa.Column("project_id", sa.Integer(), nullable=True))
        batch.create_foreign_key("fk_tools_project_id", "projects", ["project_id"], ["id"], ondelete="CASCADE")
        batch.create_index("ix_tools_project_id", ["project_id"])


def downgrade() -> None:
    with _keeping_ids(), op.batch_alter_table("tools", table_kwargs={"sqlite_autoincrement": True}) as batch:
        batch.drop_index("ix_tools_project_id")
        batch.drop_constraint("fk_tools_project_id", type_="foreignkey")
        batch.drop_column("project_id")
