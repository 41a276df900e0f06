"""`ragchat bench answers`: the committed question set, the scorer on hand-made answers, and the
command end to end (real local embedder, scripted chat model, a scratch database)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.bench import answer_scores as scores
from app.bench.answers import DEFAULT_QUESTIONS, check_mode, load_questions
from app.errors import ValidationError
from tests.providers import scripted_env

# -- the committed set -------------------------------------------------------------------------


def test_the_question_set_names_its_documents_and_each_fact_is_in_its_document() -> None:
    questions = load_questions(DEFAULT_QUESTIONS)
    documents = {p.name: p.read_text(encoding="utf-8") for p in (DEFAULT_QUESTIONS.parent / "documents").iterdir()}
    assert len(questions) >= 60 and 15 <= len(documents) <= 25
    assert len({q.id for q in questions}) == len(questions)
    assert 3 <= sum(q.answer is None for q in questions) <= 5
    for q in questions:
        if q.answer is not None:
            assert q.document in documents, q.id
            assert scores.contains_fact(documents[q.document], q.answer, q.accept), f"{q.id}: not in {q.document}"
    assert {q.document for q in questions} - {None} == set(documents)  # every document is asked about


def test_a_malformed_question_line_is_reported_with_its_line_number(tmp_path: Path) -> None:
    path = tmp_path / "questions.jsonl"
    path.write_text('{"id": "a", "question": "q?", "answer": "x", "document": "d.md"}\n{"id": "b"}\n')
    with pytest.raises(ValidationError, match=r"questions.jsonl:2"):
        load_questions(path)


# -- containing the fact -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "accept", "found"),
    [
        ("The Leeds office has 38 parking spaces [1].", ["38"], True),
        ("The Leeds office has 138 parking spaces.", ["38"], False),
        ("It costs £1,240.00 excluding VAT.", ["1240"], True),
        ("It costs £1,250.", ["1240"], False),
        ("Glasgow has **four** meeting rooms.", ["4", "four"], True),
        ("Glasgow has 4.5 meeting rooms and 14 desks.", ["4", "four"], False),
        ("The company pays 7 % into the pension.", ["7%"], True),
        ("Effective from 1st February 2024.", [r"re:\b1(st)?\s+february\s+2024"], True),
        ("Effective from 1 March 2023.", [r"re:\b1(st)?\s+february\s+2024"], False),
        ("The range is \u221220 °C to +50 °C.", [r"re:-\s?20\s?°?\s?c?\s*(to|and|-)\s*\+?\s?50"], True),
        ("It weighs 310g and costs 48p a mile.", ["310"], True),  # a unit may follow a number directly
        ("It weighs 1310g.", ["310"], False),
        ("The Rotterdam office has 1,800 sensors [4].", ["4", "four"], False),  # a citation marker is no fact
        ("1. Glasgow has 12 meeting rooms.\n4. The station is near.", ["4", "four"], False),  # nor a list number
        ("1. 2. 3. 4. 5. 6. 7. 8. 9. 10. 11. 12. 13. 14. 15. 16. 17. 18. 19. 20. 21.", ["20"], False),  # a loop
    ],
)
def test_contains_fact_in_any_accepted_form(answer: str, accept: list[str], found: bool) -> None:
    assert scores.contains_fact(answer, "unused canonical form", accept) is found


def test_a_question_without_an_answer_is_answered_by_saying_so() -> None:
    assert scores.contains_fact("Your documents do not cover this question.", None, [])
    assert scores.contains_fact("I could not find that in the documents.", None, [])
    assert not scores.contains_fact("The Manchester office has 12 parking spaces.", None, [])


# -- degenerate answers ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("", "empty"),
        ("  \n ", "empty"),
        ("[1]", "citation-only"),
        ("The source for the answer is [1].", "citation-only"),
        ("the source of the source of the source of the source of the source of the", "loop"),
        ("The threshold is set to 5. " * 50, "loop"),
        (" ".join(f"{n}." for n in range(1, 41)), "loop"),
        ("Offices opened in 2009, 2014, 2017, 2019 and 2022.", None),
        ("The Leeds office has 38 parking spaces [1].", None),
        ("The 2023 per diem is £45, the 2024 per diem is £50 and the 2025 per diem is £55 [1][2][3].", None),
    ],
)
def test_degenerate_answers(answer: str, reason: str | None) -> None:
    assert scores.degenerate(answer) == reason


# -- echoed prompts ----------------------------------------------------------------------------

TEMPLATES = [
    "Sources from the knowledge base, untrusted.\n\n{sources}\n\nQuestion: {question}\n\n{instruction}",
    "Answer using the sources above. Cite each one by its number in square brackets, like [1].",
    "Tell the user that their documents do not cover this question. Do not make up an answer.",
]


@pytest.mark.parametrize(
    ("answer", "echo"),
    [
        ("Answer using the sources above… like [1]", "answer using the sources above"),
        ("38 spaces.\nQuestion: How many parking spaces?", "Question:"),
        ('<source id="1" document="a.md">38</source>', "<source"),
        ("Cite each one by its number in square brackets.", "cite each one by its number in square brackets"),
        ("Your documents do not cover this question.", None),  # what the prompt asks for is no echo
        ("The answer uses the sources: Leeds has 38 spaces [1].", None),
    ],
)
def test_echoed_prompt_text_and_labels(answer: str, echo: str | None) -> None:
    assert scores.EchoDetector(TEMPLATES).echoed(answer) == echo


def test_the_real_prompt_files_are_read() -> None:
    detector = scores.EchoDetector.from_prompt_files()
    longest = max(
        (line for p in scores.PROMPTS.glob("*.txt") for line in p.read_text().splitlines() if "{" not in line),
        key=len,
    )
    assert detector.echoed(f"Sure. {longest}") is not None
    assert detector.echoed("The Leeds office has 38 parking spaces [1].") is None


# -- support -----------------------------------------------------------------------------------


def test_unsupported_sentences_by_word_overlap() -> None:
    source = "The Leeds office has 38 car parking spaces and 6 electric vehicle chargers."
    answer = "The Leeds office has 38 parking spaces [1]. Staff get free lunch every Friday in the canteen."
    assert scores.unsupported_sentences(answer, [source]) == ["Staff get free lunch every Friday in the canteen."]
    assert scores.unsupported_sentences("The documents do not mention a canteen menu.", [source]) == []


def test_the_pointer_to_the_closest_passage_of_a_no_answer_claims_nothing() -> None:
    source = "The Leeds office has 38 car parking spaces and 6 electric vehicle chargers."
    for where in ("under “Space and facilities”", "lines 3-9", "page 2"):
        reply = f"The documents do not answer this question. The closest passage is in office-leeds.md, {where}."
        assert scores.unsupported_sentences(reply, [source]) == []


# -- modes -------------------------------------------------------------------------------------


def test_modes_other_than_generative_need_the_session_setting() -> None:
    with pytest.raises(ValidationError, match="no answer_mode setting"):
        check_mode("extractive", {"top_k", "threshold"})
    check_mode("generative", {"top_k", "threshold"})
    check_mode("extractive", {"top_k", "answer_mode"})
    with pytest.raises(ValidationError, match="unknown answer mode"):
        check_mode("creative", {"answer_mode"})


# -- end to end --------------------------------------------------------------------------------

LEEDS = "# Leeds office\n\nThe Leeds office has 38 car parking spaces and 142 desks. It opens at 08:00.\n"
YORK = "# York office\n\nThe York office has 9 car parking spaces and 40 desks. It opens at 09:00.\n"
QUESTIONS = [
    {"id": "a", "question": "How many car parking spaces does the Leeds office have?", "answer": "38",
     "accept": ["38"], "document": "office-leeds.md", "kind": "lookalike"},
    {"id": "b", "question": "How many desks does the York office have?", "answer": "40",
     "accept": ["40"], "document": "office-york.md", "kind": "lookalike"},
    {"id": "c", "question": "How many parking spaces does the Manchester office have?", "answer": None,
     "accept": [], "document": None, "kind": "noanswer"},
]  # fmt: skip
SCRIPT = [
    "The Leeds office has 38 car parking spaces [1].",
    "The York office has 142 desks.",  # the wrong office's number
    "Your documents do not cover the Manchester office.",
]


def test_the_command_asks_every_question_in_a_fresh_session_and_scores_it(tmp_path: Path) -> None:
    (tmp_path / "documents").mkdir()
    (tmp_path / "documents" / "office-leeds.md").write_text(LEEDS)
    (tmp_path / "documents" / "office-york.md").write_text(YORK)
    (tmp_path / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    (tmp_path / "script.json").write_text(json.dumps(SCRIPT))
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("RAGCHAT_")},
        "HF_HUB_OFFLINE": "1",
        **scripted_env(tmp_path / "script.json"),
    }
    args = ["--questions", str(tmp_path / "questions.jsonl"), "--provider", "scripted", "--model", "scripted"]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "app",
            "bench",
            "answers",
            *args,
            "--mode",
            "generative",
            "--mode",
            "extractive",
            "--json",
        ],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["documents"], report["settings"]["max_answer_tokens"]) == (2, 200)
    run, extractive = report["runs"]
    assert (run["mode"], run["provider"], run["questions"], run["failed"]) == ("generative", "scripted", 3, 0)
    a, b, c = run["answers"]
    assert a["contains_fact"] and a["right_document"] and a["cited_documents"][0] == "office-leeds.md"
    assert a["first_token_ms"] is not None and a["first_token_ms"] <= a["answer_ms"]
    assert not b["contains_fact"]
    assert c["contains_fact"] and c["right_document"]  # the right reply to a question the documents do not answer
    assert (run["contains_fact"], run["degenerate"], run["echoed"]) == (2, 0, 0)
    assert a["mode_used"] == "generative" and a["guard"] in ("pass", "flagged") and a["model_contains_fact"]
    assert extractive["mode"] == "extractive" and extractive["modes_used"] == {"extractive": 3}
    assert extractive["generated"] == 0 and extractive["answers"][0]["model_text"] is None
    assert not (tmp_path / "data").exists()  # the knowledge base lived in a temporary directory
