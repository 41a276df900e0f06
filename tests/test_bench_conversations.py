"""The conversational retrieval set (benchmarks/conversations): what `ragchat bench conversations`
measures must be sound — enough conversations, every follow-up's fact in its expected document."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.bench import conversations
from app.errors import ValidationError


def test_the_set_has_forty_conversations_whose_facts_are_in_their_documents() -> None:
    follow_ups = conversations.load(conversations.DEFAULT_SET)
    assert len({f.conversation for f in follow_ups}) >= 40
    assert all(1 <= len(f.earlier) <= 2 for f in follow_ups)  # two- and three-turn conversations
    for f in follow_ups:
        text = (conversations.DEFAULT_DOCUMENTS / f.document).read_text(encoding="utf-8")
        assert f.fact in text, (f.conversation, f.fact)
        assert f.standalone.strip()  # (one follow-up, c41, is already standalone: history must not hurt it)
    documents = {p.name for p in conversations.DEFAULT_DOCUMENTS.iterdir()}
    assert 15 <= len(documents) <= 30 and {f.document for f in follow_ups} <= documents


def test_a_malformed_line_is_reported_with_its_number(tmp_path: Path) -> None:
    bad = tmp_path / "c.jsonl"
    bad.write_text('{"id": "c1", "turns": [{"message": "a"}, {"message": "b"}]}\n', encoding="utf-8")
    with pytest.raises(ValidationError, match=r"c\.jsonl line 1"):
        conversations.load(bad)
