"""A follow-up that has no cue in its words ("and ...", a short message with a pronoun) is told from
a new topic by what retrieval finds, and the answer step reads it as retrieval did: a message that
finds nothing by itself is read with the earlier turns; a message whose pronoun points back and
whose search the earlier turns clearly improve is one too, though it finds a passage alone. Real
migrated database and chat service, fake providers (bag-of-words embeddings), documents written here."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app.rag.answer.mode import AnswerMode
from app.services.chat.trace_model import RetrievalTrace
from app.settings import Settings
from tests.services.chat.second_turns import SecondTurnRig, second_turns

HANDBOOK = {
    "expenses.md": (
        "# Travel expenses\n\nSubmit a travel voucher for your travel expenses within five days of the trip. "
        "Travel expenses are reimbursed to your bank account within three business days after approval."
    ),
    "badges.md": (
        "# Building badges\n\nA lost badge is replaced at the front desk. A replacement badge needs a payment "
        "at the front desk."
    ),
}
FIRST = "How do I get my travel expenses reimbursed?"
NO_CUE = "How many days until payment?"


async def second_turn(rig: SecondTurnRig, message: str) -> tuple[str, RetrievalTrace]:
    return await rig.second_turn(message, top_k=2, answer_mode=AnswerMode.EXTRACTIVE)


@pytest.fixture
def rig(migrated: Settings) -> Iterator[SecondTurnRig]:
    with second_turns(migrated, HANDBOOK, FIRST, standalone_score=0.4) as made:
        yield made


async def test_a_follow_up_without_a_cue_is_answered_in_the_conversation(rig: SecondTurnRig) -> None:
    content, trace = await second_turn(rig, NO_CUE)
    assert trace.search is not None
    assert trace.search.standalone_score is not None and trace.search.standalone_score < 0.4
    assert trace.search.earlier == [FIRST]  # retrieval read it with the first question
    assert "three business days" in content
    assert "badge" not in content


POINTS_BACK = "Is there a deadline to submit a voucher for it after the trip?"
POINTS_INSIDE = "If I lose my badge at the office, where do I get it replaced?"


async def test_a_pronoun_that_points_back_keeps_the_conversation(rig: SecondTurnRig) -> None:
    # Longer than a short follow-up, and it finds the voucher passage alone: only what the earlier
    # turn adds to its search tells that "it" is the expenses asked about before.
    gain = rig.container.settings.rag.follow_up_gain
    content, trace = await second_turn(rig, POINTS_BACK)
    search = trace.search
    assert search is not None and search.standalone_score is not None and search.history_score is not None
    assert search.standalone_score >= 0.4
    assert search.history_score - search.standalone_score >= gain
    assert search.earlier == [FIRST]
    assert "within five days" in content


async def test_a_pronoun_that_points_inside_the_message_is_a_new_topic(rig: SecondTurnRig) -> None:
    gain = rig.container.settings.rag.follow_up_gain
    _, trace = await second_turn(rig, POINTS_INSIDE)
    search = trace.search
    assert search is not None and search.standalone_score is not None and search.history_score is not None
    assert search.history_score - search.standalone_score < gain  # the earlier turn only pulls it away
    assert search.earlier == []
    assert _first_kept(trace) == "badges.md"


def _first_kept(trace: RetrievalTrace) -> str:
    by_id = {c.chunk_id: c.document_name for c in trace.candidates}
    return by_id[(trace.source_chunk_ids or [])[0]]


# A new topic that, alone, also finds no passage above the bar: retrieval reads it with the earlier
# turn, and the answer step still quotes its own topic (it keeps the reading that answers better).
NEW_TOPIC = "Where do I pay for a replacement badge?"


async def test_a_new_topic_that_finds_little_alone_is_still_answered_on_its_topic(rig: SecondTurnRig) -> None:
    content, trace = await second_turn(rig, NEW_TOPIC)
    assert trace.search is not None and trace.search.earlier == [FIRST]
    assert content.startswith("A replacement badge needs a payment at the front desk.")
    assert "Travel expenses" not in content
