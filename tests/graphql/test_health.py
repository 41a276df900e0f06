"""Health through the real HTTP endpoint, and `ragchat serve` as a user starts it."""

from __future__ import annotations

import os
import subprocess
import sys

import httpx
import pytest

from app.container import Container
from app.main import create_app
from tests.live import free_port, serve
from tests.waiting import wait_until

HEALTH = (
    "{ health { ok version sqliteVersion sqliteVecVersion database databaseVersion vectorExtensionVersion "
    "migrationRevision headRevision } }"
)


@pytest.mark.postgres
def test_health_query_over_http(container: Container, backend: str) -> None:
    with serve(create_app(container.settings, container)) as base:
        response = httpx.post(f"{base}/graphql", json={"query": HEALTH})
    assert response.status_code == 200
    health = response.json()["data"]["health"]
    assert health["ok"] is True
    assert health["migrationRevision"] == health["headRevision"]
    assert health["database"] == backend
    if backend == "sqlite":
        assert health["sqliteVecVersion"].startswith("v0.1.")
        assert health["sqliteVersion"].startswith("3.")
        assert (health["databaseVersion"], health["vectorExtensionVersion"]) == (
            health["sqliteVersion"],
            health["sqliteVecVersion"],
        )
    else:
        assert health["sqliteVersion"] is None and health["sqliteVecVersion"] is None
        assert health["databaseVersion"].startswith("16.")
        assert health["vectorExtensionVersion"].startswith("0.6.")


def test_graphiql_is_served(container: Container) -> None:
    with serve(create_app(container.settings, container)) as base:
        page = httpx.get(f"{base}/graphql", headers={"accept": "text/html"})
    assert page.status_code == 200
    assert "graphiql" in page.text.lower()


def test_cli_migrates_then_serves_on_loopback(database_url: str) -> None:
    env = {**os.environ, "RAGCHAT_DATABASE_URL": database_url}
    subprocess.run([sys.executable, "-m", "app", "migrate"], env=env, check=True, capture_output=True)
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "app", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:

        def answered() -> httpx.Response | None:
            try:
                return httpx.post(f"http://127.0.0.1:{port}/graphql", json={"query": HEALTH}, timeout=2)
            except httpx.TransportError:
                assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
                return None

        response = wait_until(answered, 60, "`ragchat serve` to answer", interval=0.2)
        assert response.json()["data"]["health"]["ok"] is True
    finally:
        proc.terminate()
        proc.communicate(timeout=20)
