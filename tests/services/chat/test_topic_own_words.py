"""A new question whose own best passage scores under the standalone bar is still searched alone
when the earlier turn outvotes its own words: the conversation's first passage holds fewer of the
words the message asks about than the message's own first passage. A follow-up whose words the
conversation's passage holds keeps the conversation. Real migrated database and chat service, fake
providers (bag-of-words embeddings, so the bar is set above every score: each second turn here is
one that the score alone would send to the blended query)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app.services.chat.trace_model import RetrievalTrace
from app.settings import Settings
from tests.services.chat.second_turns import SecondTurnRig, second_turns

POLICIES = {
    "leave.md": (
        "# Annual leave\n\nEveryone gets 25 days of annual leave each year. Annual leave days you do not take "
        "carry over, up to five days. Book annual leave in the leave planner. A second week of leave in a row "
        "needs the long leave form."
    ),
    "badges.md": "# Visitor badges\n\nReception prints visitor badges for guests; badges stop working at midnight.",
    "canteen.md": "# Canteen\n\nThe canteen opens at noon each day.",
    "parking.md": "# Parking\n\nEach day the car park closes at ten in the evening.",
}
FIRST = "How many days of annual leave does everyone get each year, and can annual leave days carry over?"
NEW_TOPIC = "Who prints badges for guests each day of the year?"
FOLLOW_UP = "Which form is needed for a second week?"


@pytest.fixture
def rig(migrated: Settings) -> Iterator[SecondTurnRig]:
    with second_turns(migrated, POLICIES, FIRST, standalone_score=0.99) as made:
        yield made


async def second_turn(rig: SecondTurnRig, message: str) -> RetrievalTrace:
    return (await rig.second_turn(message, top_k=1))[1]


def _first_kept(trace: RetrievalTrace) -> str:
    by_id = {c.chunk_id: c.document_name for c in trace.candidates}
    return by_id[(trace.source_chunk_ids or [])[0]]


async def test_a_new_question_under_the_bar_keeps_its_own_words(rig: SecondTurnRig) -> None:
    trace = await second_turn(rig, NEW_TOPIC)
    assert trace.search is not None and trace.search.standalone_score is not None
    assert trace.search.standalone_score < 0.99  # the score alone called it a follow-up
    assert trace.search.earlier == []
    assert _first_kept(trace) == "badges.md"
    # The trace says why: the conversation's first passage held fewer of the message's own words.
    own, blended = trace.search.own_words, trace.search.history_own_words
    assert own is not None and blended is not None and own - blended >= 0.05


async def test_a_follow_up_under_the_bar_keeps_the_conversation(rig: SecondTurnRig) -> None:
    trace = await second_turn(rig, FOLLOW_UP)
    assert trace.search is not None and trace.search.standalone_score is not None
    assert trace.search.earlier == [FIRST]
    assert _first_kept(trace) == "leave.md"
    own, blended = trace.search.own_words, trace.search.history_own_words
    assert own is not None and blended is not None and own - blended < 0.05
