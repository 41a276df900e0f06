"""Isolation between knowledge bases, as a property: with random projects, documents and sessions
sharing one vocabulary (so another project's chunks would score well), no search, retrieval
preview, chat answer, streamed source, citation or trace ever names a chunk of another project."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from app.container import Container
from app.db.models import Chunk
from tests.fakes import FakeChatModel
from tests.graphql.client import Api, live_api
from tests.graphql.ops import ADD_DOC, CHAT, CREATE_PROJECT, CREATE_SESSION, SEND, nodes
from tests.reliability.helpers import fake_container
from tests.tally import CASES

WORDS = "penguin owl tea winter night steam leaf huddle hunt mouse river stone".split()
SENTENCES = st.lists(st.sampled_from(WORDS), min_size=3, max_size=12).map(" ".join)
PROJECTS = st.lists(st.lists(SENTENCES, min_size=1, max_size=3), min_size=2, max_size=3)
HITS = "hits(first: 100) { ... on SearchHitConnection { edges { node { chunkId documentId } } } } kept { chunkId documentId }"
SEARCH = f"""query($p: ID!, $q: String!, $m: RetrievalMode!) {{ search(projectId: $p, query: $q, topK: 50,
  threshold: 0, mode: $m) {{ __typename ... on SearchResults {{ {HITS} }} }} }}"""
PREVIEW = f"""query($s: ID!, $q: String!) {{ retrievalPreview(sessionId: $s, message: $q, topK: 50, threshold: 0) {{
  __typename ... on SearchResults {{ {HITS} }} }} }}"""
NAMES = itertools.count()


@pytest.fixture(scope="module")
def isolated(module_migrated_url: str) -> Iterator[tuple[Api, Container]]:
    from app.settings import Settings

    built = Settings(database_url=module_migrated_url)
    model = FakeChatModel()
    model.default_answer = "From the sources [1], and [2], and [3]."
    container = fake_container(built, model)
    with live_api(container) as api:
        yield api, container
    container.close()


def _chunks_of(container: Container, document_ids: list[str]) -> set[str]:
    with container.store.read() as db:
        query = select(Chunk.id).where(Chunk.document_id.in_([int(d) for d in document_ids]))
        rows = db.execute(query)
        return {str(r[0]) for r in rows}


def _build(api: Api, container: Container, projects: list[list[str]]) -> list[tuple[str, str, set[str], set[str]]]:
    """Each project as (project id, session id, its document ids, its chunk ids)."""
    built = []
    for sentences in projects:
        pid = api.run(CREATE_PROJECT, name=f"kb-{next(NAMES)}")["createProject"]["id"]
        docs = set()
        for i, text in enumerate(sentences):
            report = api.run(ADD_DOC, p=pid, name=f"doc-{i}.md", text=f"# Notes\n\n{text}.")["addDocument"]
            docs |= {f["document"]["id"] for f in report["files"] if f["document"]}
        created = api.run(
            CREATE_SESSION, p=pid, input={"provider": "fake", "model": "scripted", "threshold": 0.0, "topK": 50}
        )
        built.append((pid, created["createChatSession"]["id"], docs, _chunks_of(container, sorted(docs))))
    return built


def _assert_own(found: list[dict[str, str]], docs: set[str], chunks: set[str], where: str) -> None:
    for item in found:
        assert item.get("documentId") in docs, f"{where}: document {item.get('documentId')} is another project's"
        if item.get("chunkId") is not None:
            assert item["chunkId"] in chunks, f"{where}: chunk {item['chunkId']} is another project's"


@settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(projects=PROJECTS, question=SENTENCES)
def test_nothing_of_another_project_is_ever_returned(
    isolated: tuple[Api, Container], projects: list[list[str]], question: str
) -> None:
    api, container = isolated
    for pid, sid, docs, chunks in _build(api, container, projects):
        for mode in ("VECTOR", "KEYWORD", "HYBRID"):
            result = api.run(SEARCH, p=pid, q=question, m=mode)["search"]
            _assert_own(nodes(result["hits"]) + result["kept"], docs, chunks, f"search {mode}")
        preview = api.run(PREVIEW, s=sid, q=question)["retrievalPreview"]
        _assert_own(nodes(preview["hits"]) + preview["kept"], docs, chunks, "retrievalPreview")

        answer = api.run(SEND, s=sid, c=question)["sendMessage"]
        assert answer["__typename"] == "ChatMessage", answer
        trace = api.run(
            "query($id: ID!) { message(id: $id) { ... on ChatMessage { trace { candidates { chunkId documentId } } "
            "citations { chunkId documentId } } } }",
            id=answer["id"],
        )["message"]
        _assert_own(trace["trace"]["candidates"], docs, chunks, "trace")
        _assert_own(trace["citations"], docs, chunks, "citations")
        assert trace["trace"]["candidates"], "retrieval found nothing: the property would hold vacuously"

        with api.websocket() as ws:
            events = [
                e["data"]["chat"]
                for e in ws.subscribe(
                    CHAT.replace("documentName", "documentName chunkId documentId"), s=sid, c=question
                )
            ]
        retrieval = next(e for e in events if e["__typename"] == "ChatRetrieval")
        _assert_own(retrieval["sources"], docs, chunks, "chat sources")
        _assert_own(events[-1]["answer"]["citations"], docs, chunks, "streamed citations")
        CASES["isolation: projects checked"] += 1
    CASES["isolation: generated worlds"] += 1
