"""answer provenance: message status, error and retrieval trace; citations per message

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from app.db.models import UTCDateTime

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("chat_messages") as batch:
        batch.add_column(sa.Column("status", sa.String(20), nullable=False, server_default=sa.text("'complete'")))
        batch.add_column(sa.Column("error", sa.Text(), nullable=True))
        batch.add_column(sa.Column("completed_at", UTCDateTime(), nullable=True))
        batch.add_column(sa.Column("trace", sa.JSON(), nullable=True))
        batch.create_check_constraint("ck_chat_messages_status", "status IN ('complete', 'streaming', 'failed')")
    op.create_table(
        "citations",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("message_id", sa.Integer(), sa.ForeignKey("chat_messages.id", ondelete="CASCADE"), nullable=False),
        sa.Column("chunk_id", sa.Integer(), sa.ForeignKey("chunks.id", ondelete="SET NULL"), nullable=True),
        sa.Column("document_id", sa.Integer(), sa.ForeignKey("documents.id", ondelete="SET NULL"), nullable=True),
        sa.Column("marker", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("rank", sa.Integer(), nullable=False),
        sa.Column("document_name", sa.String(1000), nullable=False),
        sa.Column("location", sa.JSON(), nullable=False),
        sa.Column("snippet", sa.Text(), nullable=False),
        sa.CheckConstraint("kind IN ('model', 'attributed')", name="ck_citations_kind"),
    )
    op.create_index("ix_citations_message_id", "citations", ["message_id"])


def downgrade() -> None:
    op.drop_index("ix_citations_message_id", table_name="citations")
    op.drop_table("citations")
    with op.batch_alter_table("chat_messages") as batch:
        batch.drop_constraint("ck_chat_messages_status", type_="check")
        batch.drop_column("trace")
        batch.drop_column("completed_at")
        batch.drop_column("error")
        batch.drop_column("status")
