"""The guard that keeps database tests on both backends (tests/conftest.py, tests/backends.py): a
test that opens a SQLite database of its own instead of the `backend`-following fixtures fails,
in a real pytest run over a throwaway test file, and so does a PostgreSQL case that opens one."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests import backends
from tests.providers import REPOSITORY

OFFENDERS = """
import pytest

from app.db import migrate


def test_builds_its_own_store(tmp_path):
    migrate.upgrade(f"sqlite:///{tmp_path / 'own.db'}")


@pytest.mark.sqlite_only(reason="tests a SQLite file's own machinery")
def test_marked_sqlite_only(tmp_path):
    migrate.upgrade(f"sqlite:///{tmp_path / 'own.db'}")


@pytest.mark.postgres
def test_follows_the_backend(database_url):
    migrate.upgrade(database_url)


@pytest.mark.postgres
def test_follows_the_backend_but_also_opens_sqlite(database_url, tmp_path):
    migrate.upgrade(database_url)
    migrate.upgrade(f"sqlite:///{tmp_path / 'aside.db'}")


def test_starts_ragchat_on_the_default_database(tmp_path):
    import subprocess, sys
    subprocess.run([sys.executable, "-m", "app", "migrate"], cwd=tmp_path, check=True, capture_output=True)
"""


def _run(tmp_path: Path, chosen: str) -> str:
    (tmp_path / "test_offenders.py").write_text(textwrap.dedent(OFFENDERS), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPOSITORY), os.environ.get("PYTHONPATH")]))}
    options = ["-p", "tests.conftest", "-p", "no:cacheprovider", "-rA", "-q", f"--backends={chosen}"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *options, f"--rootdir={tmp_path}", str(tmp_path / "test_offenders.py")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.stdout


def _outcomes(output: str) -> dict[str, str]:
    """test id -> PASSED, FAILED, ERROR (a failure found at teardown), from -rA's summary."""
    found: dict[str, str] = {}
    for line in output.splitlines():
        word, _, rest = line.partition(" ")
        if word in ("PASSED", "FAILED", "ERROR") and "::" in rest:
            name = rest.split("::", 1)[1].split(" ", 1)[0]
            found[name] = "FAILED" if word == "ERROR" or found.get(name) == "FAILED" else word
    return found


def test_a_test_that_opens_sqlite_on_its_own_fails_in_a_both_backends_run(tmp_path: Path) -> None:
    output = _run(tmp_path, "sqlite,postgresql")
    assert _outcomes(output) == {
        "test_builds_its_own_store": "FAILED",
        "test_marked_sqlite_only": "PASSED",
        "test_follows_the_backend[sqlite]": "PASSED",
        "test_follows_the_backend[postgresql]": "PASSED",
        "test_follows_the_backend_but_also_opens_sqlite[sqlite]": "PASSED",
        "test_follows_the_backend_but_also_opens_sqlite[postgresql]": "FAILED",
        "test_starts_ragchat_on_the_default_database": "FAILED",
    }, output
    assert "without following the `backend` parameter" in output
    assert "runs as the PostgreSQL case but opened SQLite" in output
    assert "sqlite:///./data/ragchat.db" in output  # the child's database: the default


def test_it_fails_them_in_a_sqlite_run_too(tmp_path: Path) -> None:
    """A plain `pytest` (SQLite only) already says which tests would not follow PostgreSQL."""
    outcomes = _outcomes(_run(tmp_path, "sqlite"))
    assert outcomes["test_builds_its_own_store"] == "FAILED"
    assert outcomes["test_follows_the_backend[sqlite]"] == "PASSED"
    assert "test_follows_the_backend[postgresql]" not in outcomes


@pytest.mark.parametrize(
    ("args", "env", "url"),
    [
        ([sys.executable, "-m", "app", "serve"], {}, backends.DEFAULT_URL),
        (
            [sys.executable, "-m", "app", "ingest", "x"],
            {"RAGCHAT_DATABASE_URL": "postgresql+psycopg:///db"},
            "postgresql+psycopg:///db",
        ),
        (["/venv/bin/ragchat", "migrate"], {"RAGCHAT_DATABASE_URL": "sqlite:////tmp/x.db"}, "sqlite:////tmp/x.db"),
        ([sys.executable, "-m", "app", "export-schema"], {}, None),
        ([sys.executable, "-m", "app", "bench", "retrieval"], {}, None),  # its own scratch database
        ([sys.executable, "-m", "pytest"], {}, None),
    ],
)
def test_the_database_a_child_process_opens(args: list[str], env: dict[str, str], url: str | None) -> None:
    assert backends.child_database_url(args, env) == url
