"""Which sentence of the right document is quoted: the scores that tell the sentence that answers
from its neighbours that share the question's words. Documents written here, chunked by the real
chunker, embedded by the deterministic fake."""

from __future__ import annotations

from app.rag.answer.extractive import compose
from tests.fakes import FakeEmbedder
from tests.rag.answer.test_extractive import sources

THREADS = """# Send and Sync

Send and Sync are implemented automatically by the compiler.

Raw pointers are neither Send nor Sync.
"""

ERRORS = """# Error types

Error types should implement the standard formatting traits.

An error that is not Send cannot be returned from a spawned thread.
"""


def test_a_sentence_that_names_what_the_question_names_is_about_it_as_a_heading_that_does() -> None:
    # "Send" is in the other page's heading, and in this sentence: both say what they are about.
    kept = list(sources({"threads.md": THREADS, "errors.md": ERRORS}))
    answer = compose("Why does it matter that my error type is Send?", kept, FakeEmbedder().embed)
    assert not answer.no_answer, answer.text
    quoted = [e.text for e in answer.evidence]
    assert "An error that is not Send cannot be returned from a spawned thread." in quoted, answer.text
