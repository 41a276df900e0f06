"""keyword journal: which chunks of each project changed, in commit order

The keyword index keeps each project's term statistics and postings in memory
(app/rag/index/keyword_index.py) and must see every committed change, also one made by another process.
Triggers on ``chunks`` append the id of every inserted, deleted or re-texted chunk to its project's
journal, in the same transaction as the change; within a project ``seq`` only grows (a project's
newest row is never pruned). A deleted project's rows go with it (a trigger on ``projects``; the
chunks its deletion cascades to are not journalled, so no row outlives it). Each existing project
gets a first row with no chunk id, so a journal is empty only for a project that has never held a
chunk. Every 1000th row prunes its project's rows more than 100,000 rows behind (the newest of those
stays): an index that far behind sees the gap and reloads.

Only new objects, so no batch rebuild is needed; the downgrade drops them.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-24
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

KEEP = 100_000
PRUNE_EVERY = 1000

TRIGGERS = {
    "chunks_keyword_journal_ai": (
        "AFTER INSERT ON chunks BEGIN "
        "INSERT INTO keyword_journal(project_id, chunk_id) VALUES (new.project_id, new.id); END"
    ),
    # While a project's deletion cascades to its chunks the project row is already gone: nothing to journal.
    "chunks_keyword_journal_ad": (
        "AFTER DELETE ON chunks WHEN EXISTS (SELECT 1 FROM projects WHERE id = old.project_id) BEGIN "
        "INSERT INTO keyword_journal(project_id, chunk_id) VALUES (old.project_id, old.id); END"
    ),
    "chunks_keyword_journal_au": (
        "AFTER UPDATE OF text, project_id ON chunks BEGIN "
        "INSERT INTO keyword_journal(project_id, chunk_id) VALUES (old.project_id, old.id); "
        "INSERT INTO keyword_journal(project_id, chunk_id) VALUES (new.project_id, new.id); END"
    ),
    "projects_keyword_journal_ad": (
        "AFTER DELETE ON projects BEGIN DELETE FROM keyword_journal WHERE project_id = old.id; END"
    ),
    "keyword_journal_prune": (
        f"AFTER INSERT ON keyword_journal WHEN new.seq % {PRUNE_EVERY} = 0 BEGIN "
        "DELETE FROM keyword_journal WHERE project_id = new.project_id AND seq < "
        "(SELECT max(seq) FROM keyword_journal WHERE project_id = new.project_id "
        f"AND seq <= new.seq - {KEEP}); END"
    ),
}


def upgrade() -> None:
    op.create_table(
        "keyword_journal",
        sa.Column("seq", sa.Integer(), primary_key=True),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("chunk_id", sa.Integer(), nullable=True),
    )
    op.create_index("ix_keyword_journal_project_seq", "keyword_journal", ["project_id", "seq"])
    if op.get_bind().dialect.name != "sqlite":
        return  # PostgreSQL ranks keywords in the database (0004): no in-process index, no journal rows
    for name, body in TRIGGERS.items():
        op.execute(f"CREATE TRIGGER {name} {body}")
    op.execute("INSERT INTO keyword_journal(project_id, chunk_id) SELECT id, NULL FROM projects ORDER BY id")


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for name in reversed(TRIGGERS):
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
    op.drop_index("ix_keyword_journal_project_seq", table_name="keyword_journal")
    op.drop_table("keyword_journal")
