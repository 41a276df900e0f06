"""`ragchat ingest` on a documentation folder as a new user has one (Debian package docs, mdBook /
rustdoc output) and on a URL: every file left out is listed with its reason, text without an
extension is ingested, and --url fetches through the SSRF guard."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

from app.db import migrate
from tests.net.server import serving
from tests.rag.ingest.test_intake import MINIFIED_JS, PROSE, SEARCH_INDEX


def _run(url: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    migrate.upgrade(url)
    return subprocess.run(
        [sys.executable, "-m", "app", "ingest", *args, "--project", "kb"],
        env={**os.environ, "RAGCHAT_DATABASE_URL": url, "HF_HUB_OFFLINE": "1", "COLUMNS": "200", **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_a_documentation_folder_says_what_it_skipped_and_why(tmp_path: Path, database_url: str) -> None:
    docs = tmp_path / "doc"
    (docs / "pkg").mkdir(parents=True)
    (docs / "pkg" / "copyright").write_bytes(PROSE)
    (docs / "pkg" / "README.Debian").write_bytes(PROSE.replace(b"keeper", b"packager"))
    (docs / "pkg" / "changelog.Debian.gz").write_bytes(gzip.compress(PROSE))
    (docs / "book" / "css").mkdir(parents=True)
    (docs / "book" / "intro.md").write_bytes(b"# Intro\n\n" + PROSE.replace(b"tides", b"stars"))
    (docs / "book" / "searchindex-1a2b.js").write_bytes(SEARCH_INDEX)
    (docs / "book" / "book.js").write_bytes(MINIFIED_JS)
    (docs / "book" / "elasticlunr.min.js").write_bytes(MINIFIED_JS)
    (docs / "book" / "logo.gif").write_bytes(b"GIF89a\x01\x00\x01\x00")
    (docs / "drafts").mkdir()
    (docs / "drafts" / "wip.md").write_bytes(PROSE)
    (docs / ".ragchatignore").write_text("drafts/\n")
    done = _run(database_url, str(docs))
    out = done.stderr
    assert done.returncode == 0, out
    for line in (
        "skipped (excluded): 3",
        "drafts/: matches the .ragchatignore pattern drafts/",
        "book/searchindex-1a2b.js: matches the default pattern searchindex*.js",
        "book/elasticlunr.min.js: matches the default pattern *.min.js",
        "skipped (compressed): 1",
        "pkg/changelog.Debian.gz: gzip-compressed data",
        "skipped (unsupported): 1",
        "book/logo.gif: no parser reads .gif files",
        "skipped (minified): 1",
        "book/book.js: minified or machine-written text",
    ):
        assert line in out, (line, out)
    row = next(line for line in out.splitlines() if line.startswith("│"))
    cells = [cell.strip() for cell in row.strip("│").split("│")]
    assert cells[:5] == ["3", "0", "0", "6", "0"], out  # added: copyright, README.Debian, intro.md


def test_urls_are_fetched_through_the_guard(tmp_path: Path, database_url: str) -> None:
    with serving() as web:
        base = f"http://127.0.0.1:{web.server_address[1]}"
        refused = _run(database_url, "--url", f"{base}/notes.md")
        assert refused.returncode == 1
        assert "failed" in refused.stderr and "loopback" in refused.stderr
        allowed = _run(
            database_url,
            "--url",
            f"{base}/notes.md",
            "--url",
            f"{base}/redirect?to=http://169.254.169.254/",
            RAGCHAT_INGEST__URL_ALLOWED_NETWORKS='["127.0.0.1/32"]',
        )
    assert allowed.returncode == 1  # the second URL failed
    assert "link-local" in allowed.stderr
    assert [p for p, _ in web.seen].count("/notes.md") == 1  # type: ignore[attr-defined]
