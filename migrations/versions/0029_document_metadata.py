"""Document metadata for filters: ``documents.modified_at``, ``document_tags``, ``chat_sessions.document_filter``

A document keeps when the file itself last changed (null when nobody said) and free tags (a row
each, indexed by tag, so a filter on tags is a lookup on either backend). A chat session keeps the
filter its searches use (JSON; null: every document). Existing documents have no tags and no
modification date; existing sessions search every document, as they did.

Revision ID: 0029
Revises: 0028
Create Date: 2026-11-29
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from app.db.models import UTCDateTime

revision: str = "0029"
down_revision: str | None = "0028"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Nullable columns only: batch mode adds them in place on SQLite (no rebuild of either table).
    with op.batch_alter_table("documents") as batch:
        batch.add_column(sa.Column("modified_at", UTCDateTime(), nullable=True))
    with op.batch_alter_table("chat_sessions") as batch:
        batch.add_column(sa.Column("document_filter", sa.Text(), nullable=True))
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
    with op.batch_alter_table("chat_sessions") as batch:
        batch.drop_column("document_filter")
    with op.batch_alter_table("documents") as batch:
        batch.drop_column("modified_at")
