"""documents.source_url: the URL a document was fetched from (addDocumentFromUrl, `ragchat ingest --url`)

Null for documents uploaded as files or text, and for every document stored before. A plain
ADD COLUMN: the table is not rebuilt, so its ids, rows and the chunks pointing at them are untouched.
Downgrading drops the column (SQLite's own DROP COLUMN, again without a rebuild); the documents stay.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-25
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("documents", sa.Column("source_url", sa.Text(), nullable=True))


def downgrade() -> None:
    op.execute("ALTER TABLE documents DROP COLUMN source_url")
