"""Answer modes and the answer guard in the chat pipeline (real database, fake providers that
implement the real Protocols): AUTO chooses by what the model declares, extractive answers quote
exact spans, and a degenerate generated answer is never stored as if it were fine."""

from __future__ import annotations

import pytest

from app.container import Container
from app.llm.base import ModelCapabilities
from app.rag.answer.extractive import NO_ANSWER
from app.rag.answer.mode import AnswerMode
from app.services.chat.events import DoneEvent, ErrorEvent, RetrievalEvent, TokenEvent
from tests.fakes import FakeChatModel, FakeEmbedder
from tests.services.chat.test_service import DOCS, Rig

WEAK = ModelCapabilities(grounded_writing=False)
PENGUINS = "Emperor penguins huddle together to survive the Antarctic winter."


@pytest.fixture
def weak(container: Container) -> Rig:
    """A rig whose model declares it is not a reliable writer (as the local SmolLM2 does)."""
    return Rig(container, FakeChatModel(capabilities=WEAK), FakeEmbedder())


@pytest.fixture
def rig(container: Container) -> Rig:
    return Rig(container, FakeChatModel(), FakeEmbedder())


async def test_auto_quotes_the_sources_for_a_model_that_is_not_a_reliable_writer(weak: Rig) -> None:
    events = await weak.ask(weak.new_chat(top_k=2), "How do emperor penguins survive the Antarctic winter?")

    assert weak.model.history == []  # the model never ran
    assert isinstance(events[0], RetrievalEvent) and not events[0].no_context
    assert isinstance(events[-1], DoneEvent)
    streamed = "".join(e.text for e in events if isinstance(e, TokenEvent))
    stored, cites = weak.message(events[-1].message_id)
    assert stored.content == streamed == f"{PENGUINS} [1]"
    assert [(c.kind, c.document_name, c.snippet) for c in cites] == [("extracted", "penguins.md", PENGUINS)]
    # The citation points at the sentence's exact span in the document.
    start = DOCS["penguins.md"].index(PENGUINS)
    assert (cites[0].location["char_start"], cites[0].location["char_end"]) == (start, start + len(PENGUINS))
    assert cites[0].location["line_start"] == cites[0].location["line_end"] == 3
    answer = stored.trace["answer"]
    assert (answer["requestedMode"], answer["mode"]) == ("auto", "extractive")
    assert "not a reliable writer" in answer["reason"] and answer["sentences"] == 1


async def test_auto_lets_a_reliable_writer_write(rig: Rig) -> None:
    rig.model.enqueue("Emperor penguins huddle together in winter [1].")
    events = await rig.ask(rig.new_chat(top_k=1), "How do penguins survive the winter?")
    stored, cites = rig.message(events[-1].message_id)
    assert len(rig.model.history) == 1 and stored.content == "Emperor penguins huddle together in winter [1]."
    assert [c.kind for c in cites] == ["model"]
    answer = stored.trace["answer"]
    assert (answer["mode"], answer["guard"]["decision"]) == ("generative", "pass")
    assert answer["guard"]["original"] is None


async def test_a_session_can_ask_for_extractive_answers_from_any_model(rig: Rig) -> None:
    sid = rig.new_chat(top_k=2, answer_mode=AnswerMode.EXTRACTIVE)
    events = await rig.ask(sid, "Which owls hunt at night by sound?")
    stored, _ = rig.message(events[-1].message_id)
    assert rig.model.history == [] and "Barn owls hunt at night" in stored.content
    assert stored.trace["answer"]["reason"] == "the session asks for extractive answers"


async def test_an_extractive_answer_that_finds_no_sentence_says_so_and_why_but_is_not_no_context(weak: Rig) -> None:
    # Sources were kept (threshold 0): "nothing passed the threshold" would send the reader to lower
    # a threshold that is already 0. The answer step's own finding is noAnswer, with its reasons.
    events = await weak.ask(weak.new_chat(top_k=3, threshold=0.0), "What is the capital of Mongolia?")
    assert isinstance(events[0], RetrievalEvent) and events[0].sources and not events[0].no_context
    stored, cites = weak.message(events[-1].message_id)
    assert stored.content.startswith(NO_ANSWER) and cites == []
    assert stored.trace["noContext"] is False
    answer = stored.trace["answer"]
    assert answer["noAnswer"] is True and answer["sentences"] == 0 and answer["bar"] > 0
    assert answer["considered"] and not any(c["quoted"] for c in answer["considered"])
    assert all(c["reason"].startswith(("below the bar", "not quoted")) for c in answer["considered"])
    scores = [c["score"] for c in answer["considered"]]
    assert scores == sorted(scores, reverse=True)


async def test_with_nothing_kept_an_extractive_answer_is_no_context(weak: Rig) -> None:
    events = await weak.ask(weak.new_chat(top_k=3, threshold=0.99), "What is the capital of Mongolia?")
    assert isinstance(events[0], RetrievalEvent) and events[0].sources == [] and events[0].no_context
    stored, _ = weak.message(events[-1].message_id)
    assert stored.content.startswith(NO_ANSWER) and stored.trace["noContext"] is True


async def test_an_extractive_answer_says_why_each_candidate_was_or_was_not_quoted(rig: Rig) -> None:
    events = await rig.ask(
        rig.new_chat(top_k=3, answer_mode=AnswerMode.EXTRACTIVE), "Which owls hunt at night by sound?"
    )
    stored, _ = rig.message(events[-1].message_id)
    answer = stored.trace["answer"]
    assert answer["noAnswer"] is False and answer["sentences"] >= 1
    quoted = [c for c in answer["considered"] if c["quoted"]]
    assert quoted and all(c["reason"].startswith("quoted") for c in quoted)
    assert any("Barn owls hunt at night" in c["text"] for c in quoted)
    assert all(c["score"] >= answer["bar"] for c in quoted)


async def test_a_looping_answer_is_stopped_early_and_replaced_by_the_quoted_one(rig: Rig) -> None:
    rig.model.enqueue("the source of " * 200)
    events = await rig.ask(rig.new_chat(top_k=1), "How do emperor penguins survive the winter?")
    streamed = [e for e in events if isinstance(e, TokenEvent)]
    assert len(streamed) < 60  # stopped as soon as the loop was certain, not after 600 tokens
    stored, cites = rig.message(events[-1].message_id)
    assert isinstance(events[-1], DoneEvent) and stored.content == f"{PENGUINS} [1]"
    assert [c.kind for c in cites] == ["extracted"]
    guard = stored.trace["answer"]["guard"]
    assert guard["decision"] == "fallback" and guard["stoppedEarly"] and "loop" in guard["codes"]
    assert guard["original"].startswith("the source of the source of")


async def test_an_echoed_instruction_is_removed_and_its_marker_never_becomes_a_citation(rig: Rig) -> None:
    rig.model.enqueue(
        "Answer using the sources above. After each sentence that uses a source, cite it by its number in "
        "square brackets, like [1]. Emperor penguins huddle together to survive the winter [2]."
    )
    events = await rig.ask(rig.new_chat(top_k=2), "How do emperor penguins survive the winter?")
    stored, cites = rig.message(events[-1].message_id)
    assert "Answer using the sources" not in stored.content and "like" not in stored.content
    assert stored.content.startswith("Emperor penguins huddle together")
    guard = stored.trace["answer"]["guard"]
    assert guard["decision"] == "flagged" and guard["echoRemoved"] >= 1
    assert all(c.marker != 1 or c.document_name == "penguins.md" for c in cites)


async def test_a_degenerate_answer_with_nothing_to_quote_fails_and_stays_out_of_the_history(rig: Rig) -> None:
    sid = rig.new_chat(enable_rag=False)
    rig.model.enqueue("The threshold is set to 5. " * 50, "Penguins live in the south.")
    first = await rig.ask(sid, "what is the threshold?")
    assert isinstance(first[-1], ErrorEvent) and first[-1].code == "unusable_answer"
    stored, _ = rig.message(first[-1].message_id)
    assert stored.status == "failed" and stored.trace["answer"]["guard"]["decision"] == "rejected"

    await rig.ask(sid, "where do penguins live?")
    sent = [m.content for m in rig.model.history[-1]]
    assert "what is the threshold?" in sent  # the question stays, its degenerate answer does not
    assert not any("threshold is set to 5" in content for content in sent)


@pytest.mark.parametrize("mode", [AnswerMode.GENERATIVE, AnswerMode.EXTRACTIVE])
async def test_a_sentence_embedded_for_one_answer_is_not_embedded_again(rig: Rig, mode: AnswerMode) -> None:
    """The guard (generative) and the quoted answer (extractive) embed the sources' sentences; when
    the same chunks come back, their vectors come from the embedder's cache (app/rag/search/query_cache.py)."""
    question = "How do emperor penguins survive the Antarctic winter?"
    embedded: list[set[str]] = []
    for _ in range(2):
        rig.model.enqueue("Emperor penguins huddle together to survive the winter [1].")
        before = len(rig.embedder.calls)
        events = await rig.ask(rig.new_chat(top_k=2, answer_mode=mode), question)
        assert isinstance(events[-1], DoneEvent)
        embedded.append({text for call in rig.embedder.calls[before:] for text in call})
    first, second = embedded
    assert any(PENGUINS in text for text in first)  # the source's sentence, embedded for the first answer
    assert not first & second, first & second
