"""The no-answer decision when the question asks for a value the kept sentences do not state: a count
of things that the documents only give in hours or money, a rate that no number there is per. A
near miss shares the question's frame (holidays, mileage) but not the value asked for. Documents
written here, chunked by the real chunker."""

from __future__ import annotations

import time

from app.rag.answer.extractive import ExtractiveOptions, _counts, compose
from tests.fakes import FakeEmbedder
from tests.rag.answer.test_extractive import sources

# Every score clears a bar of 0: what declines is the missing value, not a low score.
ANY_SCORE = ExtractiveOptions(min_score=0.0)

HOLIDAYS = """# Public holidays

## Holiday pay

On a public holiday the office is closed and you are paid 8 hours for the day. If your schedule
has 10-hour days, you make up the other 2 hours during the same week.

## Working on a holiday

Example 1: you are on call on a holiday. Record the hours you worked, and you get the same number
of hours off later in the month. Payroll closes on December 22nd.
"""


def test_a_count_is_not_stated_by_hours_money_labels_or_dates() -> None:
    # Every sentence has a number, and none counts holidays: a near miss, declined.
    kept = list(sources({"holidays.md": HOLIDAYS}))
    answer = compose(
        "How many paid public holidays do we get each year?", kept, FakeEmbedder().embed, options=ANY_SCORE
    )
    assert answer.no_answer, answer.text
    assert any("a number of holidays" in c.reason for c in answer.considered), answer.considered


def test_a_count_written_out_is_stated() -> None:
    counted = HOLIDAYS.replace(
        "## Holiday pay\n", "## Holiday pay\n\nThe office closes for eleven public holidays each year.\n"
    )
    kept = list(sources({"holidays.md": counted}))
    answer = compose(
        "How many paid public holidays do we get each year?", kept, FakeEmbedder().embed, options=ANY_SCORE
    )
    assert not answer.no_answer
    assert "eleven public holidays" in answer.text


def test_a_count_of_time_is_a_duration() -> None:
    # "How many hours …" counts a measure: the hours stated answer it.
    kept = list(sources({"holidays.md": HOLIDAYS}))
    answer = compose("How many hours am I paid for a public holiday?", kept, FakeEmbedder().embed, options=ANY_SCORE)
    assert not answer.no_answer
    assert "8 hours" in answer.text


MILEAGE = """# Travel expenses

## Claiming a journey

Mileage claims over €80 need a map of the route instead of a receipt. Any other expense greater
than €25 needs a receipt. Claims are paid with the next salary.
"""


def test_a_rate_is_not_stated_by_a_number_per_nothing() -> None:
    kept = list(sources({"travel.md": MILEAGE}))
    question = "What's the per-kilometre rate when I drive my own car for work?"
    answer = compose(question, kept, FakeEmbedder().embed, options=ANY_SCORE)
    assert answer.no_answer, answer.text
    assert any("a rate" in c.reason for c in answer.considered), answer.considered

    paid = MILEAGE.replace("Claims are paid", "Driving your own car is paid at €0.30 per kilometre. Claims are paid")
    answer = compose(question, list(sources({"travel.md": paid})), FakeEmbedder().embed, options=ANY_SCORE)
    assert not answer.no_answer
    assert "€0.30 per kilometre" in answer.text


def test_a_line_of_numbers_is_read_in_one_pass() -> None:
    # What a count is read from can be a 4,000-character line of a chunk. The measure pattern once
    # read "1,1,1,…x" in exponentially many ways (22 of them took 21 s) and "1-1-1-…x" in cubic time
    # (40 s for 4,000 characters): one document could hang the composer. The bound is a hang's, not a
    # speed target.
    for token in ("1,", "1-", "1 to ", "1, ", "1."):
        line = (token * 2000)[:4000] + "x"
        started = time.process_time()
        assert _counts(line)
        assert time.process_time() - started < 5, token


def test_a_duration_is_not_a_count_whatever_word_follows_it() -> None:
    # "until" is not a stop word: the counted thing was read as "until", and a sentence giving "three
    # business days" did not count it, so a duration question was declined.
    kept = list(
        sources(
            {"expenses.md": "# Travel expenses\n\nPayment of travel expenses is made within three business days.\n"}
        )
    )
    answer = compose("How many days until payment?", kept, FakeEmbedder().embed, options=ANY_SCORE)
    assert "three business days" in answer.text, answer.text
