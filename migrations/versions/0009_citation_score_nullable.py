"""citations.score may be null: a source that had no similarity score kept none

A source has no cosine score when the stored vectors could not be read and retrieval found it by
keyword alone (see app/rag/search/degradation.py). Its citation was stored with 0.0, a score it never had;
from now on with none. Citations stored before keep their 0.0: nothing tells them from a real one.
Downgrading writes 0.0 again.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-24
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # The rebuilt table keeps AUTOINCREMENT (0008): without it ids would be reused again.
    with op.batch_alter_table("citations", table_kwargs={"sqlite_autoincrement": True}) as batch:
        batch.alter_column("score", existing_type=sa.Float(), nullable=True)


def downgrade() -> None:
    op.execute("UPDATE citations SET score = 0.0 WHERE score IS NULL")
    with op.batch_alter_table("citations", table_kwargs={"sqlite_autoincrement": True}) as batch:
        batch.alter_column("score", existing_type=sa.Float(), nullable=False)
