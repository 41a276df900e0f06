"""The demo knowledge base (`ragchat demo`, docs/demo/) answers the questions a new user asks about
it, on the offline default (AUTO with the local model: extractive), at the default threshold.

The pictures in the README and the browser test ask it; a demo that says "the documents do not
answer this question" to ordinary questions is the first thing a new user would see.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from sqlalchemy import select

from app.cli.ingest import DEMO_DIR, DEMO_PROJECT, ingest_paths
from app.container import Container
from app.db.models import ChatMessage, Citation
from app.services import projects, sessions
from app.services.chat.events import DoneEvent
from app.services.sessions import SessionChanges
from app.settings import Settings

pytestmark = pytest.mark.requires_llama  # the default chat model must exist for AUTO to choose by it

# (question, a fact the answer must hold, the document it must cite)
QUESTIONS = [
    ("Which chat model runs offline by default?", "SmolLM2-135M-Instruct", "models-and-providers.md"),
    ("Which embedding model does ragchat use?", "all-MiniLM-L6-v2", "models-and-providers.md"),
    ("Does ragchat need an internet connection?", "offline", "models-and-providers.md"),
    ("How do I use OpenAI?", "RAGCHAT_OPENAI__API_KEY", "models-and-providers.md"),
    ("How do I use Ollama?", "RAGCHAT_LLM__PROVIDER=ollama", "models-and-providers.md"),
    ("How do I switch to a different embedding model?", "ragchat reindex", "models-and-providers.md"),
    ("How do I start ragchat?", "make run", "getting-started.md"),
    ("What file types can I upload?", "PDF", "getting-started.md"),
    ("How do I add a folder of documents from the command line?", "ragchat ingest", "getting-started.md"),
    ("What happens when I upload the same file again?", "unchanged", "getting-started.md"),
    ("What is the default top_k?", "5", "rag-settings.md"),
    ("What does the threshold do?", "minimum similarity", "rag-settings.md"),
    ("What is the default threshold?", "0.30", "rag-settings.md"),
    ("How do I turn off retrieval?", "enable_rag", "rag-settings.md"),
    ("What happens when nothing passes the threshold?", "do not cover", "rag-settings.md"),
    ("How are passages searched?", "BM25", "how-answers-are-built.md"),
    ("What does the retrieval trace show?", "score", "how-answers-are-built.md"),
    ("What happens if the chat model fails?", "failed", "how-answers-are-built.md"),
    ("How many earlier messages are sent with a question?", "10", "how-answers-are-built.md"),
    ("What is the default answer mode?", "AUTO", "answer-modes.md"),
    ("Why are the answers quoted from my documents?", "not a reliable writer", "answer-modes.md"),
    ("What does the answer guard check?", "loop", "answer-modes.md"),
]


@dataclass(frozen=True)
class Answer:
    text: str
    cited: set[str]
    kinds: set[str]


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory, module_migrated_url: str) -> Iterator[dict[str, Answer]]:
    """Load the demo as `ragchat demo` does, then ask every question once, each in a new chat."""
    with pytest.MonkeyPatch.context() as env:
        for name in [n for n in os.environ if n.startswith("RAGCHAT_")]:
            env.delenv(name)
        env.chdir(tmp_path_factory.mktemp("demo"))
        settings = Settings(database_url=module_migrated_url)
        container = Container.build(settings)
        try:
            ingest_paths(container, DEMO_PROJECT, [DEMO_DIR])
            yield asyncio.run(_ask_all(container))
        finally:
            container.close()


async def _ask_all(container: Container) -> dict[str, Answer]:
    demo = projects.find(container.store, DEMO_PROJECT)
    assert demo is not None
    found = {}
    for question, _, _ in QUESTIONS:
        chat = sessions.create(container.store, container.settings, container.chat_models, demo.id, SessionChanges())
        turn = await container.chat.start(chat.id, question)
        events = [event async for event in container.chat.run(turn)]
        assert isinstance(events[-1], DoneEvent), events[-1]
        with container.store.read() as db:
            text = db.get_one(ChatMessage, events[-1].message_id).content
            cites = list(db.scalars(select(Citation).where(Citation.message_id == events[-1].message_id)))
        found[question] = Answer(text, {c.document_name for c in cites}, {c.kind for c in cites})
    return found


@pytest.mark.parametrize(("question", "fact", "document"), QUESTIONS, ids=[q for q, _, _ in QUESTIONS])
def test_the_demo_answers_a_natural_question_with_the_fact_quoted_from_its_document(
    answers: dict[str, Answer], question: str, fact: str, document: str
) -> None:
    answer = answers[question]
    assert fact in answer.text, f"{question!r} -> {answer.text!r}"
    assert document in answer.cited, f"{question!r} cites {answer.cited}: {answer.text!r}"
    assert answer.kinds == {"extracted"}


def test_the_demo_says_how_hybrid_results_are_fused_as_the_server_does_by_default() -> None:
    """The demo answers questions about ragchat itself: its words about fusion must be the default's."""
    from app.settings import RagDefaults

    text = " ".join((DEMO_DIR / "how-answers-are-built.md").read_text(encoding="utf-8").split())
    defaults = RagDefaults()
    said = {"convex": "fused by score (convex fusion)", "rrf": "fused by rank (reciprocal rank fusion)"}
    assert said[defaults.fusion] in text
    # The share of cosine in words (a new default needs its words here and in the demo).
    share = {0.75: "three quarters cosine"}[defaults.convex_alpha]
    assert share in text
