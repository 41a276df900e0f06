"""A standalone question on a new topic, asked after another topic in the same chat, is searched on
its own: the earlier turn does not pull its document ahead. A follow-up that names nothing is
still searched with the earlier turns. Real migrated database and chat service, fake providers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app.services.chat.service import ChatService
from app.services.chat.trace_model import RetrievalTrace
from app.settings import Settings
from tests.services.chat.second_turns import SecondTurnRig, second_turns

POLICIES = {
    "leave.md": (
        "# Annual leave\n\nEveryone gets 25 days of annual leave each year. Leave you do not take carries over, "
        "up to five days. Book your annual leave days in the leave planner, and report the leave you take to "
        "your manager."
    ),
    "laptops.md": "# Lost laptops\n\nReport a lost or stolen laptop to the security desk within one hour.",
}
FIRST = "How many days of annual leave does everyone get each year, and can leave days carry over?"
NEW_TOPIC = "Who do I report a stolen laptop to?"
FOLLOW_UP = "And how many can carry over?"


async def second_turn(rig: SecondTurnRig, message: str) -> RetrievalTrace:
    return (await rig.second_turn(message, top_k=1))[1]


@pytest.fixture
def rig(migrated: Settings) -> Iterator[SecondTurnRig]:
    with second_turns(migrated, POLICIES, FIRST, standalone_score=0.3) as made:
        yield made


def always_blended(rig: SecondTurnRig) -> SecondTurnRig:
    """The same chats and documents, searched as every second turn was before: with its history."""
    settings = rig.container.settings
    never = settings.model_copy(update={"rag": settings.rag.model_copy(update={"standalone_score": 1.0})})
    rig.service = ChatService(rig.container.store, never, lambda: rig.embedder, rig.models)
    return rig


def _first_kept(trace: RetrievalTrace) -> str:
    by_id = {c.chunk_id: c.document_name for c in trace.candidates}
    return by_id[(trace.source_chunk_ids or [])[0]]


async def test_a_new_topic_is_searched_alone(rig: SecondTurnRig) -> None:
    trace = await second_turn(rig, NEW_TOPIC)
    assert trace.search is not None
    assert trace.search.earlier == [] and trace.search.standalone_score is not None
    assert trace.search.standalone_score >= 0.3
    assert _first_kept(trace) == "laptops.md"
    # Blended with the earlier question, as every second turn was searched before, it is not.
    blended = await second_turn(always_blended(rig), NEW_TOPIC)
    assert blended.search is not None and blended.search.earlier == [FIRST]
    assert _first_kept(blended) == "leave.md"


async def test_a_follow_up_that_names_nothing_still_reads_the_conversation(rig: SecondTurnRig) -> None:
    trace = await second_turn(rig, FOLLOW_UP)
    assert trace.search is not None
    assert trace.search.earlier == [FIRST]
    assert trace.search.standalone_score is None  # it reads as a continuation: not searched alone
    assert _first_kept(trace) == "leave.md"
