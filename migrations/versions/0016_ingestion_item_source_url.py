"""ingestion_items.source_url: the address a queued document was fetched from (addDocumentFromUrl)

A document added by URL is fetched in the request, spooled, and ingested by the worker like an
upload; the item carries the final URL so the document records it (documents.source_url, 0014).
Null for uploads and CLI files, and for every item stored before. A plain ADD COLUMN (no rebuild:
ids and rows untouched); downgrading drops it again.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-25
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("ingestion_items", sa.Column("source_url", sa.Text(), nullable=True))


def downgrade() -> None:
    op.execute("ALTER TABLE ingestion_items DROP COLUMN source_url")
