"""ids are never handed out twice (AUTOINCREMENT); chat messages carry the client's key for a turn

Without AUTOINCREMENT SQLite gives a new row max(id) + 1, so after a delete a new row can get the id
of a deleted one, and work still running for the deleted row (an answer streaming into its message,
an upload into its project) writes into the new one. With it, SQLite remembers the highest id ever
used (``sqlite_sequence``). Rebuilding a table copies its rows with their ids, which seeds that at
max(id); the tables keep their columns, constraints and indexes (batch mode recreates them).

``vector_journal`` keeps plain rowids on purpose: within a space its ``seq`` only grows (the space's
newest row is never pruned), and its rows go only with their space, whose id is now never reused.
vec0 tables take their rowids from chunk ids and their names from space ids, both never reused now.

Triggers go first and come back last: renaming a rebuilt table checks every trigger, and the one on
``chunks`` that reads ``embedding_spaces`` fails while that table is being rebuilt. Dropping
``chunks`` also drops its own triggers (FTS, journal, one per vector space); they are recreated from
their stored SQL, so triggers made at run time (vec_space_<id>_chunk_deleted) come back too.

``chat_messages.client_message_id``: the key a client sends with a turn (graphql-ws re-sends a
subscription after reconnecting); unique in a session, so a repeat finds the turn it started.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23
"""

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("projects", "embedding_spaces", "documents", "chunks", "chat_sessions", "chat_messages", "citations")


@contextmanager
def _triggers_set_aside() -> Iterator[None]:
    triggers = op.get_bind().exec_driver_sql("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'").all()
    for name, _ in triggers:
        op.execute(f'DROP TRIGGER "{name}"')
    yield
    for _, sql in triggers:
        op.execute(sql)


def _rebuild(autoincrement: bool) -> None:
    for table in TABLES:
        with op.batch_alter_table(table, recreate="always", table_kwargs={"sqlite_autoincrement": autoincrement}):
            pass


def upgrade() -> None:
    # PostgreSQL sequences never hand out an id twice: only SQLite needs the rebuild.
    if op.get_bind().dialect.name == "sqlite":
        with _triggers_set_aside():
            _rebuild(autoincrement=True)
    op.add_column("chat_messages", sa.Column("client_message_id", sa.String(100), nullable=True))
    op.create_index(
        "uq_chat_messages_client_message_id",
        "chat_messages",
        ["session_id", "client_message_id"],
        unique=True,
        sqlite_where=sa.text("client_message_id IS NOT NULL"),
        postgresql_where=sa.text("client_message_id IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("uq_chat_messages_client_message_id", table_name="chat_messages")
    if op.get_bind().dialect.name != "sqlite":
        op.drop_column("chat_messages", "client_message_id")
        return
    with _triggers_set_aside():
        with op.batch_alter_table("chat_messages") as batch:
            batch.drop_column("client_message_id")
        _rebuild(autoincrement=False)
