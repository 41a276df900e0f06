"""Parser bombs against a live server and the CLI (issue 11, item 7): the upload fails with the reason
after ``parse_timeout``, and the server keeps answering other requests meanwhile."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from app.container import Container
from app.db import migrate
from tests.graphql.client import Api
from tests.graphql.ops import CREATE_PROJECT, UPLOAD
from tests.rag.ingest.bombs import pdf, text_operators

SLOW_PDF = pdf([text_operators(1_000_000)], [0])  # 4.9 KB; pypdf takes ~30 s to read its text
HEALTH = "{ health { ok } }"


def test_an_uploaded_bomb_fails_with_the_reason_and_the_server_stays_responsive(api: Api, rig: Container) -> None:
    rig.settings.ingest.parse_timeout = 3
    pid = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
    result: dict[str, Any] = {}

    def upload() -> None:
        own = Api(api.base)  # a client of its own: httpx clients are not shared across threads
        try:
            result.update(own.upload(UPLOAD, {"variables.files.0": ("bomb.pdf", SLOW_PDF)}, {"p": pid}))
        finally:
            own.http.close()

    started = time.monotonic()
    uploading = threading.Thread(target=upload)
    uploading.start()
    latencies = []
    while uploading.is_alive() and time.monotonic() - started < 60:
        sent = time.monotonic()
        api.run(HEALTH)
        latencies.append(time.monotonic() - sent)
        time.sleep(0.05)
    uploading.join(60)
    elapsed = time.monotonic() - started

    (file,) = result["data"]["uploadDocuments"]["items"]  # the upload waited for its job
    assert file["state"] == "FAILED" and file["error"].startswith("parsing took longer than 3 s"), file
    assert file["document"]["status"] == "FAILED"
    assert elapsed < 10
    # Parsing in-process held the GIL against the event loop (stalls up to 1.3 s were seen, every
    # health call behind them): the typical call answers at once and nine in ten within two
    # seconds. Slow calls are the machine's (a 4.4 s outlier was seen with the browser suite running
    # beside), not the parser's; the median is what a parser holding the loop would move.
    median, ninth = statistics.median(latencies), sorted(latencies)[int(len(latencies) * 0.9)]
    assert len(latencies) > 10 and median < 0.3 and ninth < 2.0, (median, ninth, max(latencies))


def test_the_cli_fails_a_bomb_with_the_reason_and_ingests_the_rest(tmp_path: Path, database_url: str) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "bomb.pdf").write_bytes(SLOW_PDF)
    (docs / "deep.html").write_bytes(b"<div>" * 100_000)
    (docs / "note.md").write_text("# Note\n\nPenguins huddle in winter.\n", encoding="utf-8")
    url = database_url
    migrate.upgrade(url)
    env = {
        **os.environ,
        "RAGCHAT_DATABASE_URL": url,
        "RAGCHAT_INGEST__PARSE_TIMEOUT": "1",
        "RAGCHAT_EMBEDDER__PROVIDER": "local",
        "HF_HUB_OFFLINE": "1",
    }
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "app", "ingest", str(docs), "--project", "kb"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = " ".join(done.stderr.split())  # rich wraps long lines
    assert done.returncode == 1, output
    assert "failed bomb.pdf: parsing took longer than 1 s" in output
    assert "failed deep.html: parsing took longer than 1 s" in output
    assert time.monotonic() - started < 60
