"""chat sessions carry their RAG settings: enable_rag, top_k, threshold, include_citations

Existing sessions keep their rows and get the defaults. The threshold default is the one the
server is configured with (RAGCHAT_RAG__THRESHOLD), passed in by `ragchat migrate`.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FALLBACK_THRESHOLD = 0.25


def _default_threshold() -> float:
    value = float(op.get_context().config.attributes.get("default_threshold", FALLBACK_THRESHOLD))
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"default threshold {value} is outside [0, 1]")
    return value


def upgrade() -> None:
    threshold = _default_threshold()
    with op.batch_alter_table("chat_sessions") as batch:
        batch.add_column(sa.Column("enable_rag", sa.Boolean(), nullable=False, server_default=sa.true()))
        batch.add_column(sa.Column("top_k", sa.Integer(), nullable=False, server_default=sa.text("5")))
        batch.add_column(sa.Column("threshold", sa.Float(), nullable=False, server_default=sa.text(repr(threshold))))
        batch.add_column(sa.Column("include_citations", sa.Boolean(), nullable=False, server_default=sa.true()))
        batch.create_check_constraint("ck_chat_sessions_top_k", "top_k BETWEEN 1 AND 50")
        batch.create_check_constraint("ck_chat_sessions_threshold", "threshold >= 0 AND threshold <= 1")


def downgrade() -> None:
    with op.batch_alter_table("chat_sessions") as batch:
        batch.drop_constraint("ck_chat_sessions_threshold", type_="check")
        batch.drop_constraint("ck_chat_sessions_top_k", type_="check")
        batch.drop_column("include_citations")
        batch.drop_column("threshold")
        batch.drop_column("top_k")
        batch.drop_column("enable_rag")
