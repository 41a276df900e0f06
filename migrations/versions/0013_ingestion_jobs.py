"""ingestion jobs: uploads, CLI calls and fetched addresses as durable jobs of per-file items

``uploadDocuments`` used to parse and embed inside the request. Now it spools the files under the
data directory and records a job with one item per file; a worker in the server process takes the
queued items one by one (app/services/ingestion/worker.py). An item's state moves queued -> parsing ->
embedding -> ready | failed | cancelled (or skipped), each change in its own short transaction, and
``ready`` commits in the same transaction as the document, so after a SIGKILL an unfinished item
simply starts again and nothing half-written is ever visible.

Only new tables, so no batch rebuild is needed; the downgrade drops them (the documents they
produced stay: they are ordinary documents).

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-25
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ORIGINS = ("upload", "cli", "url")
STATES = ("queued", "parsing", "embedding", "ready", "failed", "cancelled", "skipped")


def _one_of(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


def upgrade() -> None:
    op.create_table(
        "ingestion_jobs",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("project_id", sa.Integer(), sa.ForeignKey("projects.id", ondelete="CASCADE"), nullable=False),
        sa.Column("origin", sa.String(20), nullable=False),
        sa.Column("api_key_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.CheckConstraint(_one_of("origin", ORIGINS), name="ck_ingestion_jobs_origin"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_ingestion_jobs_project_id_id", "ingestion_jobs", ["project_id", "id"])
    op.create_table(
        "ingestion_items",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("job_id", sa.Integer(), sa.ForeignKey("ingestion_jobs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("project_id", sa.Integer(), sa.ForeignKey("projects.id", ondelete="CASCADE"), nullable=False),
        sa.Column("name", sa.String(1000), nullable=False),
        sa.Column("size_bytes", sa.Integer(), nullable=False),
        sa.Column("source_path", sa.Text(), nullable=False),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("outcome", sa.String(20), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("document_id", sa.Integer(), sa.ForeignKey("documents.id", ondelete="SET NULL"), nullable=True),
        sa.Column("chunks_done", sa.Integer(), nullable=False),
        sa.Column("chunks_total", sa.Integer(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("started_at", sa.DateTime(), nullable=True),
        sa.Column("finished_at", sa.DateTime(), nullable=True),
        sa.CheckConstraint(_one_of("state", STATES), name="ck_ingestion_items_state"),
        sa.CheckConstraint("chunks_done >= 0 AND chunks_total >= 0", name="ck_ingestion_items_chunks"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_ingestion_items_job_id_id", "ingestion_items", ["job_id", "id"])
    op.create_index("ix_ingestion_items_state_id", "ingestion_items", ["state", "id"])
    op.create_index("ix_ingestion_items_project_id", "ingestion_items", ["project_id"])


def downgrade() -> None:
    op.drop_index("ix_ingestion_items_project_id", table_name="ingestion_items")
    op.drop_index("ix_ingestion_items_state_id", table_name="ingestion_items")
    op.drop_index("ix_ingestion_items_job_id_id", table_name="ingestion_items")
    op.drop_table("ingestion_items")
    op.drop_index("ix_ingestion_jobs_project_id_id", table_name="ingestion_jobs")
    op.drop_table("ingestion_jobs")
