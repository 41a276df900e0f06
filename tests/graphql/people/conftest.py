"""A live server with people: each person a client of its own (its own cookie jar), speaking JSON
GraphQL over HTTP as the web app does."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from app.container import Container
from app.db.models import Project
from app.main import create_app
from app.services.people import users
from app.settings import PeopleSettings, Settings
from tests.fakes import FakeChatModel, FakeEmbedder, FakeModels
from tests.live import serve

PASSWORD = "correct horse battery"


class Server:
    def __init__(self, container: Container, base: str) -> None:
        self.container = container
        self.base = base
        self._clients: list[httpx.Client] = []

    def client(self, headers: dict[str, str] | None = None) -> httpx.Client:
        made = httpx.Client(base_url=self.base, headers=headers or {}, timeout=30)
        self._clients.append(made)
        return made

    def person(self, email: str, *, admin: bool = False, password: str = PASSWORD) -> int:
        with self.container.store.write() as db:
            return users.create(db, users.NewPerson(email, email.split("@")[0], password, is_admin=admin)).id

    def project(self, name: str) -> int:
        with self.container.store.write() as db:
            row = Project(name=name, description="")
            db.add(row)
            db.flush()
            return row.id

    def close(self) -> None:
        for made in self._clients:
            made.close()


def gql(client: httpx.Client, query: str, **variables: Any) -> dict[str, Any]:
    response = client.post("/graphql", json={"query": query, "variables": variables})
    body = response.json()
    assert "errors" not in body, body
    return dict(body["data"])


def signed_in(server: Server, email: str, password: str = PASSWORD) -> httpx.Client:
    client = server.client()
    answer = gql(client, SIGN_IN, email=email, password=password)["signIn"]
    assert answer["__typename"] == "Person", answer
    return client


SIGN_IN = """mutation($email: String!, $password: String!) { signIn(email: $email, password: $password) {
  __typename ... on Person { id email isAdmin } ... on Error { message }
  ... on TooManyAttemptsError { retryAfterSeconds } } }"""
ME = "{ me { id email } }"


@pytest.fixture
def people_server(migrated: Settings) -> Iterator[Callable[..., Any]]:
    """Starts a server with these RAGCHAT_PEOPLE__ settings (and Settings fields)."""
    opened: list[tuple[Container, Server]] = []

    @contextmanager
    def start(people: dict[str, Any] | None = None, **fields: Any) -> Iterator[Server]:
        settings = migrated.model_copy(update={"people": PeopleSettings(**(people or {})), **fields})
        container = Container.build(settings, embedder=FakeEmbedder(), chat_models=FakeModels(FakeChatModel()))
        with serve(create_app(settings, container)) as base:
            server = Server(container, base)
            opened.append((container, server))
            yield server
            server.close()

    yield start
    for container, _ in opened:
        container.close()
