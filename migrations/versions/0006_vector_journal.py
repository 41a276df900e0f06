"""vector journal: which vectors changed in each embedding space, in commit order

The search index keeps each space's vectors in memory (app/rag/index/vector_index.py) and must see every
committed change, also one made by another process. `vector_store.put` appends the chunk ids it
writes; a trigger appends the id of every deleted chunk for each space of its project. Within a
space `seq` only grows (the space's newest row is never pruned). Each existing space gets a first
row with no chunk id, so a journal is empty only for a space that has never held a vector.

Only new objects, so no batch rebuild is needed; the downgrade drops them.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "vector_journal",
        sa.Column("seq", sa.Integer(), primary_key=True),
        sa.Column("space_id", sa.Integer(), sa.ForeignKey("embedding_spaces.id", ondelete="CASCADE"), nullable=False),
        sa.Column("chunk_id", sa.Integer(), nullable=True),
    )
    op.create_index("ix_vector_journal_space_seq", "vector_journal", ["space_id", "seq"])
    if op.get_bind().dialect.name != "sqlite":
        return  # PostgreSQL searches in the database: no in-process index to keep coherent, no journal rows
    op.execute(
        "CREATE TRIGGER chunks_vector_journal AFTER DELETE ON chunks BEGIN "
        "INSERT INTO vector_journal(space_id, chunk_id) "
        "SELECT id, old.id FROM embedding_spaces WHERE project_id = old.project_id; END"
    )
    op.execute("INSERT INTO vector_journal(space_id, chunk_id) SELECT id, NULL FROM embedding_spaces ORDER BY id")


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TRIGGER IF EXISTS chunks_vector_journal")
    op.drop_index("ix_vector_journal_space_seq", table_name="vector_journal")
    op.drop_table("vector_journal")
