"""Document metadata for filters: ``documents.modified_at``, ``document_tags``, ``chat_sessions.document_filter``

A document keeps when the file itself last changed (null when nobody said) and free tags (a row
each, indexed by tag, so a filter on tags is a lookup on either backend). A chat session keeps the
filter its searches use (JSON; null: every document). A knowledge base counts the changes of
its documents' tags and dates (``projects.metadata_revision``): with the chunks' revision, the key
under which a filter's resolved chunks are kept in memory. Existing documents have no tags and no
modification date; existing sessions search every document, as they did.

Revision ID: 0030
Revises: 0029
Create Date: 2026-11-29
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from app.db.models import UTCDateTime

revision: str = "0030"
down_revision: str | None = "0029"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Nullable columns only: batch mode adds them in place on SQLite (no rebuild of either table).
    with op.batch_alter_table("documents") as batch:
        batch.add_column(sa.Column("modified_at", UTCDateTime(), nullable=True))
    with op.batch_alter_table("chat_sessions") as batch:
        batch.add_column(sa.Column("document_filter", sa.Text(), nullable=True))
    # Not batch mode: a rebuilt projects table would break the triggers that name it (SQLite's
    # ALTER TABLE ADD COLUMN takes a NOT NULL column with a constant default in place).
    op.add_column("projects", sa.Column("metadata_revision", sa.Integer(), server_default=sa.text("0"), nullable=False))
    op.create_table(
        "document_tags",
        sa.Column("document_id", sa.Integer(), sa.ForeignKey("documents.id", ondelete="CASCADE"), nullable=False),
        sa.Column("tag", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("document_id", "tag"),
    )
    op.create_index("ix_document_tags_tag", "document_tags", ["tag", "document_id"])


def downgrade() -> None:
    op.drop_index("ix_document_tags_tag", table_name="document_tags")
    op.drop_table("document_tags")
    op.drop_column("projects", "metadata_revision")  # SQLite >= 3.35 drops a column in place
    with op.batch_alter_table("chat_sessions") as batch:
        batch.drop_column("document_filter")
    with op.batch_alter_table("documents") as batch:
        batch.drop_column("modified_at")
