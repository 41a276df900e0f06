"""Attribution cuts answers into sentences with the shared splitter (app.rag.answer.sentences)."""

from __future__ import annotations

from app.rag.answer import citations


def test_a_decimal_point_is_not_a_sentence_end() -> None:
    parsed = citations.attribute(
        "The probe weighs 0.31 kg and lasts 3 years. I like cheese.",
        ["The probe weighs 0.31 kg and its battery lasts 3 years."],
        None,
    )
    assert parsed.text == "The probe weighs 0.31 kg and lasts 3 years. [1] I like cheese."
    assert parsed.used == [1]


def test_markers_go_after_each_supported_sentence_and_keep_the_text_between() -> None:
    answer = "Barn owls hunt at night.\n\n- Emperor penguins huddle in winter.\n- Cheese is tasty."
    sources = ["Barn owls hunt at night and find mice by sound.", "Emperor penguins huddle in the winter."]
    parsed = citations.attribute(answer, sources, None)
    assert parsed.text == (
        "Barn owls hunt at night. [1]\n\n- Emperor penguins huddle in winter. [2]\n- Cheese is tasty."
    )
    assert parsed.used == [1, 2]
