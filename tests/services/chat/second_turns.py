"""A chat service over a few documents written in the test, asked a second message after a first:
how a second turn is read (alone or with the conversation) is seen in its trace and its answer.
Real migrated database and chat service, fake providers (bag-of-words embeddings)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from app.container import Container
from app.rag.ingest.pipeline import Source
from app.services import documents
from app.services.chat.trace_model import RetrievalTrace, parse
from app.settings import Settings
from tests.fakes import FakeChatModel, FakeEmbedder
from tests.services.chat.test_service import Rig


class SecondTurnRig(Rig):
    def __init__(self, container: Container, texts: Mapping[str, str], first: str) -> None:
        super().__init__(container, FakeChatModel(), FakeEmbedder())
        self.first = first
        documents.ingest(
            container.store,
            self.embedder,
            container.settings.ingest,
            self.project_id,
            [Source.from_bytes(name, text.encode()) for name, text in texts.items()],
        )

    async def second_turn(self, message: str, **session: object) -> tuple[str, RetrievalTrace]:
        """The answer to ``message`` asked after the first question in a new chat, and its trace."""
        sid = self.new_chat(threshold=0.0, **session)
        await self.ask(sid, self.first)
        events = await self.ask(sid, message)
        row, _ = self.message(events[-1].message_id)
        trace = parse(row.trace)
        assert trace is not None and trace.search is not None
        return row.content, trace


@contextmanager
def second_turns(
    migrated: Settings, texts: Mapping[str, str], first: str, *, standalone_score: float
) -> Iterator[SecondTurnRig]:
    """The rig on ``migrated`` with its own standalone bar: the fake embedder's bag-of-words cosines
    are lower than a real model's."""
    rag = migrated.rag.model_copy(update={"standalone_score": standalone_score})
    container = Container.build(migrated.model_copy(update={"rag": rag}))
    try:
        yield SecondTurnRig(container, texts, first)
    finally:
        container.close()
