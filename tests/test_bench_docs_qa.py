"""`ragchat bench answers --dataset`: the docs-qa loader, the judging rules, and the command end to
end over a tiny dataset written here (real local embedder, offline default answer mode)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.bench import docs_qa
from app.errors import ValidationError

QUESTIONS = """# a comment line
How long may a guest stay?|14 nights;two weeks|guests

Who waters the plants?|the caretaker|plants/guests
Is there a swimming pool?||NONE
"""
CONVERSATIONS = """Who waters the plants?|And how often?|twice a week|plants
"""
GUESTS = """# Guests

A guest may stay for up to 14 nights in any one year.
Guests sign the visitor book at the front desk.
"""
PLANTS = """# Plants

The caretaker waters the plants in the lobby.
The plants are watered twice a week, on Mondays and Thursdays.
"""


def _dataset(root: Path) -> Path:
    corpus = root / "tiny"
    (corpus / "docs").mkdir(parents=True)
    (corpus / "docs" / "guests.md").write_text(GUESTS)
    (corpus / "docs" / "plants.md").write_text(PLANTS)
    (corpus / "questions.txt").write_text(QUESTIONS)
    (corpus / "conversations.txt").write_text(CONVERSATIONS)
    return root


def test_the_loader_reads_questions_none_and_conversations(tmp_path: Path) -> None:
    questions, follow_ups = docs_qa.load_corpus(_dataset(tmp_path) / "tiny")
    assert [q.question for q in questions] == [
        "How long may a guest stay?",
        "Who waters the plants?",
        "Is there a swimming pool?",
    ]
    assert questions[0].facts == ("14 nights", "two weeks") and questions[0].documents == ("guests",)
    assert questions[1].documents == ("plants", "guests")
    assert not questions[2].answerable and questions[2].facts == ()
    (follow,) = follow_ups
    assert (follow.earlier, follow.question, follow.facts) == (
        "Who waters the plants?",
        "And how often?",
        ("twice a week",),
    )


@pytest.mark.parametrize(
    ("line", "where"),
    [("a question?|a fact", "questions.txt:1"), ("a question?|a fact|NONE", "questions.txt:1")],
)
def test_a_malformed_line_names_its_file_and_line(tmp_path: Path, line: str, where: str) -> None:
    (tmp_path / "c" / "docs").mkdir(parents=True)
    (tmp_path / "c" / "questions.txt").write_text(line + "\n")
    with pytest.raises(ValidationError, match=where):
        docs_qa.load_corpus(tmp_path / "c")


def test_an_unknown_corpus_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="no corpus nope"):
        docs_qa.corpora(_dataset(tmp_path), ["nope"])


@pytest.mark.parametrize(
    ("answer", "facts", "found"),
    [
        ("A guest may stay for up to **14 nights** [1].", ["14 nights"], True),  # emphasis removed
        ("Use `into_inner` to unwrap it.", ["into_inner"], True),  # underscores matched literally
        ("Use `intoinner` to unwrap it.", ["into_inner"], False),
        ("It\u2019s the caretaker\u2019s job.", ["caretaker's job"], True),  # typographic apostrophes
        ("A guest may stay for up to 15 nights.", ["14 nights", "two weeks"], False),
        ("Up to Two Weeks.", ["14 nights", "two weeks"], True),
    ],
)
def test_the_fact_is_a_substring_after_lowercasing_and_removing_stars(
    answer: str, facts: list[str], found: bool
) -> None:
    assert docs_qa.has_fact(answer, facts) is found


def test_citations_any_and_first_and_declining() -> None:
    item = docs_qa.Item("tiny", "Who waters the plants?", ("the caretaker",), ("plants",))
    markers = {1: "guests", 2: "plants"}
    answer = "The caretaker waters the plants [2]. Guests sign the book [1]."
    cited = docs_qa.cited_in_order(answer, markers)
    assert cited == ["plants", "guests"]  # the order the text cites them in, not the markers'
    scored = docs_qa.judge(item, answer, cited, False, 10.0)
    assert (scored.fact, scored.cited_any, scored.cited_first, scored.declined) == (True, True, True, False)
    late = docs_qa.judge(item, answer, ["guests", "plants"], False, 10.0)
    assert late.cited_any and not late.cited_first
    none = docs_qa.Item("tiny", "Is there a swimming pool?", (), ())
    refusal = "The documents do not answer this question. The closest passage is in guests.md, under “Guests”."
    assert docs_qa.judge(none, refusal, [], True, 5.0).declined
    assert not docs_qa.judge(none, "There is a pool on the roof [1].", ["guests"], False, 5.0).declined
    assert docs_qa.judge(none, "Your documents do not cover this question.", [], True, 5.0).declined


def test_the_summary_counts_and_reports_the_decline_precision_and_recall() -> None:
    fact = docs_qa.Item("tiny", "q1", ("x",), ("a",))
    none = docs_qa.Item("tiny", "q2", (), ())
    refusal = "The documents do not answer this question."
    singles = [
        docs_qa.judge(fact, "x is here [1].", ["a"], False, 100.0),
        docs_qa.judge(fact, refusal, [], True, 300.0),  # an answerable question declined
        docs_qa.judge(none, refusal, [], True, 200.0),
        docs_qa.judge(none, "y [1].", ["a"], False, 200.0),
    ]
    s = docs_qa.summarise(
        singles, [docs_qa.judge(docs_qa.Item("tiny", "f", ("x",), ("a",), "q1"), "x [1]", ["a"], False, 50.0)]
    )
    assert (s["answerable"], s["fact"], s["cited_any"], s["none_questions"], s["none_declined"]) == (2, 1, 1, 2, 1)
    assert (s["decline_precision"], s["decline_recall"], s["follow_up_fact"]) == (0.5, 0.5, 1)
    assert s["median_ms"] == 200.0 and s["p95_ms"] == 300.0


def test_the_command_asks_a_tiny_dataset_through_a_chat(tmp_path: Path) -> None:
    dataset = _dataset(tmp_path / "set")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("RAGCHAT_")}, "HF_HUB_OFFLINE": "1"}
    out = tmp_path / "out.json"
    done = subprocess.run(
        [sys.executable, "-m", "app", "bench", "answers", "--dataset", str(dataset), "--out", str(out)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    tiny = report["corpora"]["tiny"]
    assert (tiny["documents"], tiny["answerable"], tiny["none_questions"], tiny["follow_ups"]) == (2, 2, 1, 1)
    guest, plants, pool = tiny["questions"]
    assert guest["fact"] and guest["cited_first"] and guest["cited"][0] == "guests"
    assert plants["fact"] and plants["cited_any"]
    assert pool["declined"]
    assert tiny["conversations"][0]["earlier"] == "Who waters the plants?"
    assert report["total"]["answerable"] == 2 and report["total"]["median_ms"] > 0
    assert not (tmp_path / "data").exists()  # the knowledge base lived in a temporary directory
