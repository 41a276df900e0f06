"""embedding spaces: which model made a project's vectors

Each space owns one sqlite-vec `vec0` table, `vec_space_<id>`, holding the embeddings of that
project's chunks (rowid = chunk id). A vec0 table's dimension is fixed when it is created, and
spaces differ in dimension (384 for the local model, 1536 for OpenAI's), so the vector store
creates the table, and a trigger that keeps it in step with `chunks`, when the space is created;
downgrading drops them all.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from app.db.models import UTCDateTime

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        # A space's vectors live in a `vector(d)` column (app/rag/index/spaces.py). Left in place by the
        # downgrade: the extension may be shared, and only its owner may drop it.
        op.execute("CREATE EXTENSION IF NOT EXISTS vector")
    op.create_table(
        "embedding_spaces",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("project_id", sa.Integer(), sa.ForeignKey("projects.id", ondelete="CASCADE"), nullable=False),
        sa.Column("provider", sa.String(50), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("dimensions", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.CheckConstraint("dimensions > 0", name="ck_spaces_dimensions"),
        sa.CheckConstraint("status IN ('building', 'active', 'retired')", name="ck_spaces_status"),
    )
    op.create_index("ix_embedding_spaces_project_id", "embedding_spaces", ["project_id"])
    op.create_index(
        "uq_spaces_one_active",
        "embedding_spaces",
        ["project_id"],
        unique=True,
        sqlite_where=sa.text("status = 'active'"),
        postgresql_where=sa.text("status = 'active'"),
    )


def downgrade() -> None:
    bind = op.get_bind()
    for (space_id,) in bind.exec_driver_sql("SELECT id FROM embedding_spaces").all():
        if bind.dialect.name == "sqlite":
            op.execute(f"DROP TRIGGER IF EXISTS vec_space_{int(space_id)}_chunk_deleted")
        op.execute(f"DROP TABLE IF EXISTS vec_space_{int(space_id)}")
    op.drop_index("uq_spaces_one_active", table_name="embedding_spaces")
    op.drop_index("ix_embedding_spaces_project_id", table_name="embedding_spaces")
    op.drop_table("embedding_spaces")
