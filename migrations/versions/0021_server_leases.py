"""servers and owners: which API server is writing an answer, running a tool call or ingesting a file

Several API servers may share one PostgreSQL database (issue 18). At start-up a server used to fail
every answer left "streaming" and requeue every item being ingested: with two servers, the second
to start would fail the first's answers mid-stream. Now each server registers a row in
``servers`` (ids never reused) and holds a lock that ends with its process (app/db/server_locks.py);
the rows it is working on carry its id in ``owner``. What a server that stopped (its lock free) or
an unknown process (no owner: a CLI command, or a row from before this revision) left behind is
recovered; what a live server holds is never touched. New nullable columns, ADD COLUMN (no rebuild);
downgrading drops them and the table (who was writing is forgotten; every row stays).

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-25
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OWNED = ("chat_messages", "tool_calls", "ingestion_items")


def upgrade() -> None:
    op.create_table(
        "servers",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.DateTime(), nullable=False),
        sqlite_autoincrement=True,
    )
    for table in OWNED:
        op.add_column(table, sa.Column("owner", sa.Integer(), nullable=True))


def downgrade() -> None:
    for table in OWNED:
        op.execute(f"ALTER TABLE {table} DROP COLUMN owner")
    op.drop_table("servers")
