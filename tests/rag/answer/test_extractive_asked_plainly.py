"""Extractive answers to questions as someone new to the documents asks them: with a story around
the question, their own amounts and numbers written out, a yes/no question, an item whose meaning is
in its list's lead-in, a follow-up that names nothing, and a value the documents never state.
Documents written here, chunked by the real chunker."""

from __future__ import annotations

import re
from collections.abc import Sequence

from app.llm.base import Vectors
from app.rag.answer import sentences
from app.rag.answer.extractive import ExtractiveOptions, compose
from tests.fakes import FakeEmbedder
from tests.rag.answer.test_extractive import sources

TRAINING = """# Training and conferences

## Approval timelines

Submit the events request form well before the event:

- Fifteen days in advance for:
  - Training that costs less than $2,500
  - Conference events that cost less than $2,500
- Three to five weeks in advance for:
  - Conference events that cost more than $2,500
  - Events abroad

## Eligibility for study leave

To take study leave, you must have all of the following:

- Completed your probation period
- A learning plan agreed with your manager
"""


def test_a_list_item_is_quoted_with_the_lead_in_that_says_the_answer() -> None:
    # "Conference events that cost more than $2,500" matches the question; the answer is the item it
    # is nested in. The asker's own amount ("about $3,000") is not a name the document must repeat.
    kept = list(sources({"training.md": TRAINING}))
    answer = compose(
        "A conference I want to attend will cost about $3,000. How far ahead should I submit the request?",
        kept,
        FakeEmbedder().embed,
    )
    assert not answer.no_answer, answer.text
    assert "Three to five weeks in advance for:\n- Conference events that cost more than $2,500" in answer.text


def test_an_item_under_a_sentence_lead_in_is_quoted_with_its_whole_list() -> None:
    # "you must have all of the following:" is answered by all of them, once.
    kept = list(sources({"training.md": TRAINING}))
    answer = compose("What do I need to have completed to take study leave?", kept, FakeEmbedder().embed)
    assert not answer.no_answer, answer.text
    listed = re.compile(
        r"following:(?: \[1\])?\n- Completed your probation period(?: \[1\])?\n- A learning plan agreed"
    )
    assert listed.search(answer.text), answer.text
    assert answer.text.count("To take study leave") == 1


VAULT = """# Seed vault

## Drawer ranges

The vault keeps three ranges of drawers apart:

- 100…199 → drawers for grain seeds, kept dry and low.
- 500…599 → drawers for flower seeds, opened with the brass key.
- 900…999 → drawers for tree seeds, checked every spring.
"""


def test_an_item_the_question_singles_out_is_quoted_without_its_siblings() -> None:
    # Asked about flower seeds, the one item that names them answers; its siblings are about
    # other seeds, and quoting the whole list would bury the answer in them.
    kept = list(sources({"vault.md": VAULT}))
    answer = compose("Which drawers are for flower seeds?", kept, FakeEmbedder().embed)
    assert not answer.no_answer, answer.text
    assert "apart:\n- 500…599 → drawers for flower seeds, opened with the brass key. [1]" in answer.text
    assert "grain" not in answer.text and "tree seeds" not in answer.text


BILLING = """# Billable hours

## Expectations

Everyone is expected to spend at least 80% of their working time on billable project work.

## Short weeks

| Days worked | Billable hours |
|---|---|
| 1 day | 6.5 hours |
| 2 days | 13 hours |
| 3 days | 19 hours |
| 4 days | 25.5 hours |
"""


def test_a_number_written_out_meets_its_digits() -> None:
    kept = list(sources({"billing.md": BILLING}))
    answer = compose(
        "In a week where I'm only working three days, how many hours am I expected to bill?", kept, FakeEmbedder().embed
    )
    assert not answer.no_answer, answer.text
    assert answer.considered[0].text == "3 days: 19 hours", answer.considered


def test_words_opening_a_sentence_and_contractions_are_not_names() -> None:
    found = sentences.names("My badge stopped working and says Access Denied. Anything I can try? I'm at Gate B2.")
    assert "anything" not in found and "im" not in found
    assert {"access", "denied", "b2"} <= found.keys()  # names inside a sentence still are


class StoryBlindEmbedder(FakeEmbedder):
    """The word-hashing fake, blind to the words of an asker's story: to it, the question with the
    story and the question without it mean the same, as they nearly do to a real embedder."""

    STORY = frozenset("joined eight months ago expecting baby".split())

    def embed(self, texts: Sequence[str]) -> Vectors:
        return super().embed([re.sub(r"\w+", lambda m: "" if m[0].lower() in self.STORY else m[0], t) for t in texts])


LEAVE = """# Parental leave

## Eligibility

You need to have been an employee for 12 months to take paid parental leave.
"""


def test_a_question_told_as_a_story_is_still_answered() -> None:
    # Most of the question's words ("joined", "eight", "months", "baby"…) are in no source; they are
    # the asker's circumstances, and without them the question means the same: it is answered.
    kept = list(sources({"leave.md": LEAVE}))
    question = "I joined eight months ago and we are expecting a baby. Can I take paid parental leave?"
    answer = compose(question, kept, StoryBlindEmbedder().embed, options=ExtractiveOptions(min_score=0.0))
    assert not answer.no_answer, answer.text
    assert "12 months" in answer.text


CAR_PARK = """# Office

## Parking

Visitors park in the staff car park at weekends.

On weekdays visitors must not park in the staff car park.
"""


def test_a_yes_no_question_prefers_the_sentence_that_states_the_rule() -> None:
    # Both sentences have the question's words; "Can visitors …?" asks for a verdict, which the
    # second states.
    kept = list(sources({"office.md": CAR_PARK}))
    options = ExtractiveOptions(max_sentences=1)
    answer = compose("Can visitors park in the staff car park?", kept, FakeEmbedder().embed, options=options)
    assert answer.evidence[0].text == "On weekdays visitors must not park in the staff car park.", answer.text


PARKING = """# Parking

Apply for a parking permit through the facilities portal. To cancel your permit, choose Withdraw in
the facilities portal.
"""

ROOMS = """# Meeting rooms

Book a meeting room in the shared calendar. To cancel a room booking, delete the calendar event at
least an hour before the meeting starts.
"""


def test_a_follow_up_is_scored_in_its_conversation() -> None:
    # "And how do I cancel it?" names nothing: alone, the room booking's cancellation fits it as well
    # as the permit's. After a question about the parking permit, it is the permit.
    kept = list(sources({"rooms.md": ROOMS, "parking.md": PARKING}))
    options = ExtractiveOptions(max_sentences=1, min_score=0.0)  # the fake's cosines are low
    alone = compose("And how do I cancel it?", kept, FakeEmbedder().embed, options=options)
    assert "Withdraw" not in alone.text  # the fixture shows the follow-up alone is ambiguous
    answer = compose(
        "And how do I cancel it?",
        kept,
        FakeEmbedder().embed,
        options=options,
        earlier=("How do I apply for a parking permit?",),
    )
    assert not answer.no_answer
    assert answer.evidence[0].text == "To cancel your permit, choose Withdraw in the facilities portal.", answer.text


def test_a_standalone_question_after_another_topic_is_read_alone() -> None:
    kept = list(sources({"rooms.md": ROOMS, "parking.md": PARKING}))
    question = "How do I cancel a meeting room booking?"
    alone = compose(question, kept, FakeEmbedder().embed)
    after = compose(question, kept, FakeEmbedder().embed, earlier=("How do I apply for a parking permit?",))
    assert after.text == alone.text and "calendar" in after.text


BACKUPS = """# Backups

## Database backups

Backups of the customer database are encrypted and copied to a second region. Restores are tested
by the operations team, and backups are kept in a separate storage account.
"""


def test_a_value_no_sentence_states_is_not_answered() -> None:
    # Sentences about backups score well, but none says for how long they are kept.
    kept = list(sources({"backups.md": BACKUPS}))
    options = ExtractiveOptions(min_score=0.0)
    answer = compose("How long are database backups kept?", kept, FakeEmbedder().embed, options=options)
    assert answer.no_answer, answer.text
    assert any("states the kind of value" in c.reason for c in answer.considered)
    stated = BACKUPS.replace("are kept in", "are kept for 35 days in")
    answer = compose("How long are database backups kept?", list(sources({"b.md": stated})), FakeEmbedder().embed)
    assert not answer.no_answer and "35 days" in answer.text


AGREEMENTS = """# Team agreements

Every team keeps these pages:

- Working agreements
  - Definition of Done
    - The checks every story passes before it is closed.
  - Definition of Ready
    - How complete a story must be before the team estimates it.
"""


def test_an_item_nested_in_a_bare_label_is_that_term_s_explanation() -> None:
    # No "is" and no colon: the nesting says the item explains the label above it.
    kept = list(sources({"agreements.md": AGREEMENTS}))
    answer = compose("What does the Definition of Ready describe?", kept, FakeEmbedder().embed)
    assert not answer.no_answer, answer.text
    assert "Definition of Ready:\n- How complete a story must be before the team estimates it." in answer.text
    assert answer.considered[0].text.startswith("Definition of Ready: How complete"), answer.considered
