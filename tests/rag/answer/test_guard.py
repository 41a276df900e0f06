"""The answer guard on recorded bad outputs (the ones issue 12 quotes, and more SmolLM2-135M wrote
for benchmarks/answers), streamed as a model streams them; and good answers, which pass untouched."""

from __future__ import annotations

import re

import pytest

from app.rag import prompting
from app.rag.answer import citations
from app.rag.answer.guard import AnswerGuard, Decision, StreamCheck, Verdict, check
from tests.fakes import FakeEmbedder

HANDBOOK = """# Aurora handbook

## Installation

To install Aurora, download the installer and run `aurora setup` in a terminal. The setup wizard
checks that your machine has at least 2 GB of free disk space. Installation takes about two minutes
on a typical laptop.

## Retrieval

Passages below the threshold are dropped. The default threshold is 0.25.
"""
AURORA = [prompting.Source(1, "aurora.md", "lines 1-12, Aurora handbook > Installation", HANDBOOK)]
OFFICES = [
    prompting.Source(1, "office-leeds.md", "lines 21-44, Leeds office > Space", "| Car parking spaces | 38 |"),
    prompting.Source(2, "office-bristol.md", "lines 21-41, Bristol office > Space", "| Car parking spaces | 12 |"),
]
AQ100 = [
    prompting.Source(
        1,
        "product-aq100.md",
        "lines 1-20, Corvid AQ-100 Air Quality Monitor",
        "| Battery life | 14 months at a 10-minute reporting interval |",
    )
]
INSTRUCTION = (
    "Answer using the sources above. After each sentence that uses a source, cite it by its number in square "
    "brackets, like [1]."
)


def tokens(text: str) -> list[str]:
    """Deltas as a model streams them: a word with the space before it."""
    return re.findall(r"\s*\S+", text)


def stream(
    text: str, question: str = "How long does installation take?", sources: list[prompting.Source] = AURORA
) -> tuple[Verdict, int, StreamCheck]:
    """Feed ``text`` delta by delta until the guard says stop; the verdict, deltas fed, last check."""
    guard = AnswerGuard(question, sources)
    fed, last = 0, StreamCheck(False)
    for delta in tokens(text):
        fed += 1
        last = guard.feed(delta)
        if last.stop:
            break
    return guard.review(FakeEmbedder().embed), fed, last


# -- recorded bad outputs -----------------------------------------------------------------------


def test_the_source_of_the_source_is_stopped_within_a_few_words() -> None:
    verdict, fed, last = stream("The source of " + "the source of " * 127)  # 384 tokens, the token limit
    assert last.stop and last.reason is not None and last.reason.code == "loop"
    assert fed <= 15
    assert verdict.decision is Decision.FALLBACK and verdict.degenerate


def test_a_sentence_written_over_and_over_is_stopped_at_its_third_time() -> None:
    verdict, fed, last = stream("The threshold is set to 5. " * 50, "What is the default threshold?")
    assert last.stop and fed == 3 * 6 + 1  # "5." might still become "5.5": the next word settles it
    assert verdict.degenerate and verdict.text.count("The threshold is set to 5.") == 1
    assert verdict.reasons[0].code == "loop"


@pytest.mark.parametrize(
    "answer",
    [
        "The source for the answer is [1].",
        "The source for the answer is: [1]\nThe source for the answer is: [1]",  # recorded
        "The nearest railway station to the Bristol office is [1].",  # recorded: a marker for an answer
    ],
)
def test_nothing_but_citations_is_degenerate(answer: str) -> None:
    verdict, _, _ = stream(answer)
    assert verdict.decision is Decision.FALLBACK and verdict.degenerate
    assert "citations_only" in [r.code for r in verdict.reasons]


@pytest.mark.parametrize("answer", [INSTRUCTION, "Answer using the sources above… like [1]"])
def test_the_echoed_instruction_goes_and_its_marker_never_becomes_a_citation(answer: str) -> None:
    verdict, _, _ = stream(answer)
    assert verdict.text == "" and verdict.markers_dropped == 1 and verdict.echoes_removed == 1
    assert verdict.decision is Decision.FALLBACK and "only_echo" in [r.code for r in verdict.reasons]
    assert citations.parse(verdict.text, 1).used == []


def test_an_echo_before_a_real_answer_is_cut_and_the_answer_kept_flagged() -> None:
    answer = f"{INSTRUCTION}\n\nInstallation takes about two minutes on a typical laptop [1]."
    verdict, _, _ = stream(answer)
    assert verdict.text == "Installation takes about two minutes on a typical laptop [1]."
    assert verdict.decision is Decision.FLAGGED and not verdict.degenerate
    assert (verdict.echoes_removed, verdict.markers_dropped) == (1, 1)
    assert citations.parse(verdict.text, 1).used == [1]


def test_source_fences_labels_and_the_question_echoed_are_removed() -> None:
    answer = (
        "Question: How long does installation take?\n\nSource [1]: aurora.md\n\n"
        "Installation takes about two minutes [1] aurora.md, lines 1-12.\n\n"
        '<source id="1" document="aurora.md" location="lines 1-12, Aurora handbook > Installation">\n# Aurora'
    )  # the last line as SmolLM2 wrote it: the prompt's fence and the source copied after it
    verdict, _, _ = stream(answer)
    assert verdict.text == "Installation takes about two minutes [1]."
    assert verdict.decision is Decision.FLAGGED and verdict.echoes_removed == 4


def test_an_invented_detail_is_flagged_unsupported() -> None:
    answer = "Installation takes about two minutes [1]. Aurora was written by Linus Torvalds in 1991."
    verdict, _, _ = stream(answer)
    assert verdict.unsupported == (1,) and verdict.sentences[1].startswith("Aurora was written")
    assert verdict.decision is Decision.FLAGGED and verdict.text == answer


@pytest.mark.parametrize(
    ("answer", "question", "sources"),
    [
        # recorded: a name no source has (the question asked about it)
        ("The Manchester office has 12 car parking spaces.", "How many parking spaces in Manchester?", OFFICES),
        # recorded: a number of the sources with another unit
        ("The Corvid TH-10 temperature sensor has a battery life of 14 years.", "TH-10 battery life?", AQ100),
        # recorded: a number no source sentence about parking has
        ("The Leeds office has 11 car parking spaces.", "How many parking spaces in Leeds?", OFFICES),
    ],
)
def test_an_answer_that_is_mostly_invented_falls_back(
    answer: str, question: str, sources: list[prompting.Source]
) -> None:
    verdict, _, _ = stream(answer, question, sources)
    assert verdict.unsupported == (0,)
    assert verdict.decision is Decision.FALLBACK and "mostly_unsupported" in [r.code for r in verdict.reasons]


@pytest.mark.parametrize(
    "answer",
    [
        "1. 1. 1. 2. 3. 4. 5. 6. 7. 8. 9. 10. 11. 12. 13. 14. 15. 16. 17. 18. 19. 20. 21. 22. 23. 24. 25. 26. 27. 28. "
        "29. 30. 31. 32. 33. 34. 35. 36. 37. 38. 39. 40. 41. 42. 43. 44. 45. 46. 47. 48. 49. 50.",
        "1. The Data Protection Officer\n2. The 12-month training\n3. The 31-day training\n4. The 31-day training\n"
        "5. The 12-month training\n6. The 31-day training\n7. The 12-month training\n8. The 31-day training\n9. The",
        "Question: How many new colleagues joined in Q1 2025?\n\nAnswer: 2\n\n" * 6,
        "........ " * 20,
    ],
)
def test_recorded_loops_with_a_counter_or_without_words_are_stopped(answer: str) -> None:
    verdict, fed, last = stream(answer)
    assert last.stop and fed < len(tokens(answer))
    assert verdict.degenerate


# -- good answers pass untouched ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "question"),
    [
        ("It is fast, very very fast: installation takes about two minutes on a typical laptop [1].", "How long?"),
        (
            "To install Aurora:\n\n1. Download the installer.\n2. Run `aurora setup` in a terminal.\n"
            "3. Wait about two minutes [1].",
            "How do I install Aurora?",
        ),
        (
            "The setup wizard checks for at least 2 GB of free disk space [1]. Installation takes about two "
            "minutes on a typical laptop [1]. The default threshold is 0.25 [1].",
            "What does the setup need?",
        ),
        ("To install Aurora, download the installer and run `aurora setup` [1].", "How do I install Aurora?"),
        ("Aurora installs in about two minutes. [1]", "How long does installing Aurora take?"),
        (HANDBOOK.split("## Installation\n\n")[1].split("\n\n")[0], "How do I install Aurora?"),
    ],
)
def test_good_answers_pass_untouched(answer: str, question: str) -> None:
    verdict, fed, last = stream(answer, question)
    assert not last.stop and fed == len(tokens(answer))
    assert verdict.decision is Decision.PASS, verdict.reasons
    assert verdict.text == answer and verdict.reasons == () and verdict.unsupported == ()


def test_saying_the_documents_do_not_cover_it_is_an_answer() -> None:
    verdict, _, _ = stream("The documents do not cover it.", "Who is the chair of the board?")
    assert verdict.decision is Decision.PASS and verdict.declined


def test_without_sources_nothing_is_checked_for_support() -> None:
    verdict = check("Paris is the capital of France.", "Capital of France?", [], None)
    assert verdict.decision is Decision.PASS and verdict.unsupported == ()


# -- mechanics ----------------------------------------------------------------------------------


def test_how_the_stream_is_cut_does_not_change_the_verdict() -> None:
    for answer in ["The threshold is set to 5. " * 5, f"{INSTRUCTION} Installation takes two minutes [1]."]:
        whole = check(answer, "How long?", AURORA, None)
        guard = AnswerGuard("How long?", AURORA)
        for char in answer:  # "thres" + "hold", "0." + "25": tokens wait for their end
            guard.feed(char)
        assert guard.review(None) == whole


def test_support_embeds_every_sentence_in_one_call() -> None:
    embedder = FakeEmbedder()
    check("Installation takes two minutes [1]. It needs 2 GB of disk space.", "How long?", AURORA, embedder.embed)
    assert len(embedder.calls) == 1 and embedder.calls[0][:2] == [
        "Installation takes two minutes.",
        "It needs 2 GB of disk space.",
    ]


def test_a_quantity_or_name_is_never_read_across_two_sources() -> None:
    """Each source is read on its own: "14" ending one source and "weeks" starting the next one's
    name are not the quantity "14 weeks" (nor are two sources' words a name run together)."""
    sources = [
        prompting.Source(1, "trial.md", "lines 1-3", "The trial of the new sensor lasted 14"),
        prompting.Source(2, "weeks-planner.md", "lines 1-2", "Station schedules are set by the regional teams."),
    ]
    invented = check("The trial of the new sensor lasted 14 weeks.", "How long was the sensor trial?", sources)
    assert invented.unsupported == (0,)
    kept = check("The trial of the new sensor lasted 14.", "How long was the sensor trial?", sources)
    assert kept.unsupported == ()


def test_once_stopped_the_guard_stays_stopped() -> None:
    guard = AnswerGuard("q", AURORA)
    for delta in tokens("the source of " * 10):
        guard.feed(delta)
    assert guard.feed(" Installation takes two minutes.").stop


@pytest.mark.slow
def test_the_support_bar_separates_paraphrase_from_word_salad_on_real_minilm_vectors() -> None:
    from app.llm.embedders.local import LocalEmbedder

    embed = LocalEmbedder().embed
    paraphrase = "Setting Aurora up takes roughly two minutes on a normal laptop [1]."
    assert check(paraphrase, "How long does installation take?", AURORA, embed).decision is Decision.PASS
    salad = "The people at the end of this sentence is the people at the end of the sentence."  # recorded
    verdict = check(salad, "Who are the people?", AURORA, embed)
    assert verdict.unsupported == (0,) and verdict.degenerate
