"""Two servers' workers claiming spooled ingestion items from one database at once (issue 18):
each item is claimed exactly once, none is left behind. On PostgreSQL the claim is
``FOR UPDATE SKIP LOCKED``; on SQLite the write transaction serialises the claimers."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import select

from app.db.database import Database
from app.db.enums import ItemState, JobOrigin
from app.db.models import IngestionItem, IngestionJob
from app.services import projects
from app.services.ingestion import jobs
from app.settings import Settings

pytestmark = pytest.mark.postgres

ITEMS = 40


def test_two_servers_claim_every_item_exactly_once(migrated: Settings) -> None:
    servers = [Database.from_url(migrated.database_url) for _ in range(2)]
    try:
        project = projects.create(servers[0], "kb")
        with servers[0].write() as db:
            job = IngestionJob(project_id=project.id, origin=JobOrigin.UPLOAD)
            db.add(job)
            db.flush()
            db.add_all(
                IngestionItem(job_id=job.id, project_id=project.id, name=f"f{n}.txt", source_path=f"/spool/{n}")
                for n in range(ITEMS)
            )
        claimed: list[list[int]] = [[] for _ in range(4)]
        start = threading.Barrier(4)

        def worker(n: int) -> None:
            start.wait()
            while (row := jobs.claim(servers[n % 2])) is not None:
                claimed[n].append(row.id)

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        every = [i for ids in claimed for i in ids]
        assert len(every) == ITEMS and len(set(every)) == ITEMS
        with servers[1].read() as db:
            rows = db.execute(select(IngestionItem.state, IngestionItem.attempts)).all()
        assert {(state, attempts) for state, attempts in rows} == {(ItemState.PARSING, 1)}
    finally:
        for server in servers:
            server.dispose()
