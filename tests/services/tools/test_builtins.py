"""The built-in tools' executors over a real store: arguments checked against the stored schema
first, results the model can read with the chunks they came from, and no reach beyond the chat's
own knowledge base."""

from __future__ import annotations

import pytest

from app.container import Container
from app.db.models import Chunk, Document
from app.errors import NotFoundError, ValidationError
from app.rag.ingest.pipeline import Ingestor, Source
from app.services import projects
from app.services.tools import catalog as tools
from app.services.tools.builtins import EXECUTORS, READ_MAX_CHUNKS, ToolContext, check_arguments, run_builtin
from tests.fakes import FakeEmbedder

DOCS = {
    "penguins.md": "# Penguins\n\nEmperor penguins huddle together to survive the Antarctic winter.",
    "owls.md": "# Owls\n\nBarn owls hunt at night and find mice by sound alone.",
}
LONG = "\n\n".join(f"## Part {i}\n\n" + " ".join(f"word{i}x{j}" for j in range(120)) for i in range(30))


@pytest.fixture
def rig(container: Container) -> tuple[ToolContext, int, int]:
    embedder = FakeEmbedder()
    ingest = Ingestor(container.store, embedder, container.settings.ingest)
    kb = projects.create(container.store, "kb").id
    ingest.ingest(kb, [Source.from_bytes(n, t.encode()) for n, t in DOCS.items()])
    ingest.ingest(kb, [Source.from_bytes("long.md", LONG.encode())])
    other = projects.create(container.store, "other").id
    ingest.ingest(other, [Source.from_bytes("secret.md", b"# Secret\n\nThe launch code is 0000.")])
    with container.store.read() as db:
        secret_id = db.query(Document).filter(Document.project_id == other).one().id
        long_id = db.query(Document).filter(Document.name == "long.md").one().id
    return ToolContext(container.store, lambda: embedder, container.settings, kb), secret_id, long_id


def builtin(context: ToolContext, name: str):  # type: ignore[no-untyped-def]
    return next(t for t in tools.list_tools(context.store, "knowledge_base") if t.name == name)


def test_the_migration_seeds_exactly_the_built_in_tools_that_have_executors(container: Container) -> None:
    seeded = tools.list_tools(container.store, "knowledge_base")
    assert sorted(t.name for t in seeded) == sorted(EXECUTORS)
    assert all(t.kind == "builtin" and t.examples and t.input_schema["type"] == "object" for t in seeded)
    assert [t.name for t in seeded if t.core] == ["search_knowledge_base"]


def test_search_knowledge_base_returns_passages_with_their_sources(rig: tuple[ToolContext, int, int]) -> None:
    context, _, _ = rig
    out = run_builtin(context, builtin(context, "search_knowledge_base"), '{"query": "penguins antarctic winter"}')
    assert out.sources and out.sources[0].document_name == "penguins.md"
    assert "Emperor penguins huddle" in out.content and "[1] penguins.md" in out.content
    assert all(s.document_name != "secret.md" for s in out.sources)


def test_read_document_reads_a_bounded_span_of_its_own_knowledge_base(rig: tuple[ToolContext, int, int]) -> None:
    context, secret_id, long_id = rig
    read = builtin(context, "read_document")
    out = run_builtin(context, read, {"document_id": long_id, "from": 2, "to": 3})
    assert [s.ordinal for s in out.sources] == [2, 3]
    with context.store.read() as db:
        expected = [c.text for c in db.query(Chunk).filter(Chunk.document_id == long_id, Chunk.ordinal.in_([2, 3]))]
    assert [s.text for s in out.sources] == expected and all(t in out.content for t in expected)
    wide = run_builtin(context, read, {"document_id": long_id, "from": 0, "to": 10_000})
    assert len(wide.sources) == READ_MAX_CHUNKS
    past = run_builtin(context, read, {"document_id": long_id, "from": 9000})
    assert not past.sources and "has no chunks from 9000" in past.content
    with pytest.raises(NotFoundError):  # another knowledge base's document, by a guessed id
        run_builtin(context, read, {"document_id": secret_id})
    with pytest.raises(ValidationError, match=r"arguments\.to"):
        run_builtin(context, read, {"document_id": long_id, "from": 5, "to": 1})


def test_list_documents_lists_only_this_knowledge_base(rig: tuple[ToolContext, int, int]) -> None:
    context, _, _ = rig
    out = run_builtin(context, builtin(context, "list_documents"), "{}")
    assert out.content.startswith("3 documents:")
    assert "penguins.md" in out.content and "long.md" in out.content and "secret.md" not in out.content


def test_arguments_are_checked_against_the_schema_before_anything_runs(rig: tuple[ToolContext, int, int]) -> None:
    context, _, _ = rig
    search = builtin(context, "search_knowledge_base")
    with pytest.raises(ValidationError) as bad:
        check_arguments(search, {"query": "", "top_k": 99, "extra": True})
    fields = [field for field, _ in bad.value.problems]
    assert fields == ["arguments", "arguments.query", "arguments.top_k"]
    with pytest.raises(ValidationError, match="not valid JSON"):
        run_builtin(context, search, '{"query": oops}')
    with pytest.raises(ValidationError, match="must be a JSON object"):
        run_builtin(context, search, "[1, 2]")
    with pytest.raises(ValidationError, match="'query' is a required property"):
        run_builtin(context, search, "{}")


def test_schemas_reach_nothing_outside_themselves() -> None:
    from app.db.models import Tool
    from app.services.tools.schema import check_schema

    remote = {"type": "object", "properties": {"a": {"$ref": "https://evil.example/schema.json"}}}
    assert check_schema(remote) == [
        ("inputSchema", "references only within the schema ('#/...'), not 'https://evil.example/schema.json'")
    ]
    local = {"type": "object", "properties": {"a": {"$ref": "#/$defs/code"}}, "$defs": {"code": {"type": "string"}}}
    assert check_schema(local) == []
    assert check_arguments(Tool(name="t", input_schema=local), {"a": "x"}) == {"a": "x"}
    dangling = {"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}
    with pytest.raises(ValidationError, match="the tool's schema cannot be applied"):
        check_arguments(Tool(name="t", input_schema=dangling), {"a": 1})
