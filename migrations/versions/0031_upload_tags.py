"""Tags for uploaded files: ``ingestion_items.tags``

An upload may name the tags its files' documents get; each item keeps them (JSON; null: the
document's own tags are kept) until the worker stores its document, which gets them in the same
transaction. Existing items have none, so their documents keep their tags, as they did.

Revision ID: 0031
Revises: 0030
Create Date: 2026-11-29
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0031"
down_revision: str | None = "0030"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # A nullable column: batch mode adds it in place on SQLite (no rebuild of the table).
    with op.batch_alter_table("ingestion_items") as batch:
        batch.add_column(sa.Column("tags", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("ingestion_items") as batch:
        batch.drop_column("tags")
