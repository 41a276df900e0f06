"""answer modes: chat sessions choose generative, extractive or auto answers; extracted citations

Existing sessions get ``auto`` (generative when the chat model writes grounded answers reliably,
extractive otherwise). Citations may now be of kind ``extracted`` (a sentence quoted from a source,
located at its exact span). Downgrading turns extracted citations into attributed ones, the
nearest older kind, rather than deleting them.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("chat_sessions") as batch:
        batch.add_column(sa.Column("answer_mode", sa.String(20), nullable=False, server_default=sa.text("'auto'")))
        batch.create_check_constraint(
            "ck_chat_sessions_answer_mode", "answer_mode IN ('generative', 'extractive', 'auto')"
        )
    with op.batch_alter_table("citations") as batch:
        batch.drop_constraint("ck_citations_kind", type_="check")
        batch.create_check_constraint("ck_citations_kind", "kind IN ('model', 'attributed', 'extracted')")


def downgrade() -> None:
    op.execute("UPDATE citations SET kind = 'attributed' WHERE kind = 'extracted'")
    with op.batch_alter_table("citations") as batch:
        batch.drop_constraint("ck_citations_kind", type_="check")
        batch.create_check_constraint("ck_citations_kind", "kind IN ('model', 'attributed')")
    with op.batch_alter_table("chat_sessions") as batch:
        batch.drop_constraint("ck_chat_sessions_answer_mode", type_="check")
        batch.drop_column("answer_mode")
