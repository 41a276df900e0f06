"""`pip install .` gives a ragchat that works away from the source tree: the wheel is built, installed
in a fresh venv, and its own `ragchat` migrates a database, loads the demo and serves the API (and the
frontend, when it was built before the wheel).

The fresh venv has no pip and no packages of its own: a .pth file puts this venv's site-packages
after its own, for the dependencies only (plain path lines, so the editable install's finder in there
is not run). ragchat itself must come from the wheel, which the test checks: ``app`` is imported from
the new venv, the console script is the new venv's, and no process it starts sees the checkout.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import zipfile
from contextlib import closing
from importlib.metadata import version
from pathlib import Path

import httpx
import pytest

from tests.live import free_port
from tests.waiting import wait_until

pytestmark = pytest.mark.slow

CHECKOUT = Path(__file__).resolve().parents[1]
FRONTEND_DIST = CHECKOUT / "frontend" / "dist"
# What building a wheel reads; copied away so the build can only use what it is given, and leaves
# no build/ in the checkout.
SOURCES = ["pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "LICENSE", "app", "migrations", "docs/demo"]
HEALTH = "{ health { ok version migrationRevision headRevision } }"


def run(
    *args: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=300, env=env, cwd=cwd)
    assert done.returncode == 0, f"{args} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done


def dependency_dirs() -> list[str]:
    """This interpreter's site-packages folders: the dependencies, tested here. Not PYTHONPATH (the
    checkout) and not the editable install's finder, which lives in a .pth these lines do not run."""
    return [p for p in sys.path if Path(p).name in ("site-packages", "dist-packages")]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("source")
    for name in SOURCES:
        src, dst = CHECKOUT / name, source / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, dst)
    if (FRONTEND_DIST / "index.html").is_file():
        shutil.copytree(FRONTEND_DIST, source / "frontend" / "dist")
    setuptools = version("setuptools")
    assert int(setuptools.split(".")[0]) >= 77, f"setuptools {setuptools} cannot build it: `make install` upgrades it"
    out = tmp_path_factory.mktemp("wheel")
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", out, source)
    (built,) = out.glob("ragchat-*.whl")
    return built


def test_the_wheel_carries_migrations_prompts_demo_and_license(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    migrations = sorted(n for n in names if n.startswith("app/migrations/versions/") and n.endswith(".py"))
    assert [Path(n).name for n in migrations] == sorted(p.name for p in (CHECKOUT / "migrations/versions").glob("*.py"))
    assert {"app/migrations/env.py", "app/migrations/script.py.mako"} <= names
    assert {f"app/rag/prompts/{p.name}" for p in (CHECKOUT / "app/rag/prompts").glob("*.txt")} <= names
    assert {f"app/demo/{p.name}" for p in (CHECKOUT / "docs/demo").iterdir()} <= names
    assert "app/llm/data/minilm-tokenizer.json" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), sorted(names)
    assert not any("__pycache__" in n or n.startswith(("tests/", "migrations/", "benchmarks/")) for n in names)
    if (FRONTEND_DIST / "index.html").is_file():
        assert {"app/static/index.html", "app/static/graphiql.html"} <= names


@pytest.mark.sqlite_only(
    reason="the installed wheel as shipped, without the [postgres] extra: its SQLite file, read back with sqlite3"
)
def test_installed_wheel_migrates_loads_the_demo_and_serves(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv)
    python = venv / "bin" / "python"
    own_site = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip())
    (own_site / "ragchat-test-dependencies.pth").write_text("".join(f"{p}\n" for p in dependency_dirs()))
    run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", wheel)

    work = tmp_path / "work"  # no app/ and no .env here, unlike the checkout
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGCHAT_", "PYTHON"))}
    env |= {"HF_HUB_OFFLINE": "1", "RAGCHAT_DATABASE_URL": f"sqlite:///{work / 'data' / 'ragchat.db'}"}
    where = run(
        python, "-c", "import app, app.resources as r; print(app.__file__); print(r.MIGRATIONS)", env=env, cwd=work
    )
    module, migrations = where.stdout.split()
    assert Path(module).is_relative_to(own_site), module
    assert Path(migrations) == own_site / "app" / "migrations"
    # The dependencies this venv tested with satisfy the wheel's declared bounds.
    run(sys.executable, "-m", "pip", "--python", python, "check", env=env, cwd=work)

    ragchat = venv / "bin" / "ragchat"
    run(ragchat, "migrate", env=env, cwd=work)
    demo = run(ragchat, "demo", env=env, cwd=work)  # exits 1 when a file failed
    assert "created knowledge base ragchat docs" in demo.stderr, demo.stderr
    with closing(sqlite3.connect(work / "data" / "ragchat.db")) as db:
        documents = db.execute("SELECT name FROM documents WHERE status = 'ready'").fetchall()
    assert sorted(name for (name,) in documents) == sorted(p.name for p in (CHECKOUT / "docs/demo").iterdir())

    port = free_port()
    log = tmp_path / "serve.log"
    with (
        log.open("w") as out,
        subprocess.Popen(
            [ragchat, "serve", "--host", "127.0.0.1", "--port", str(port)], env=env, cwd=work, stdout=out, stderr=out
        ) as server,
    ):
        base = f"http://127.0.0.1:{port}"
        try:

            def answered() -> httpx.Response | None:
                try:
                    return httpx.post(f"{base}/graphql", json={"query": HEALTH}, timeout=2)
                except httpx.TransportError:
                    assert server.poll() is None, log.read_text()
                    return None

            response = wait_until(
                answered, 60, "the installed `ragchat serve` to answer", interval=0.2, detail=log.read_text
            )
            health = response.json()["data"]["health"]
            assert health["ok"] is True and health["migrationRevision"] == health["headRevision"], health
            page = httpx.get(f"{base}/", timeout=5)
            if (FRONTEND_DIST / "index.html").is_file():
                assert page.status_code == 200 and '<div id="root">' in page.text, page.text[:300]
                graphiql = httpx.get(f"{base}/graphql", headers={"accept": "text/html"}, timeout=5)
                assert graphiql.status_code == 200 and "make frontend" not in graphiql.text
            else:
                assert page.status_code == 404  # the API only, as the build said
        finally:
            server.terminate()
