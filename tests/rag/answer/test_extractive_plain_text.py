"""Plain text laid out the way DocBook's text output, man pages and reStructuredText write it. A
definition list (a term on its own line, its explanation indented below): each sentence of an
explanation is quoted under its term, since "Members of this role may …" alone does not say which
role. A table (columns two or more spaces apart over a line of dashes): each row is a candidate of
its own. Documents written here, chunked by the real chunker."""

from __future__ import annotations

from dataclasses import replace

from app.rag.answer.extractive import compose
from tests.fakes import FakeEmbedder
from tests.rag.answer.test_extractive import sources

ROLES = """Roles in the seed library

   Every volunteer holds one of the roles below.

   keeper
          The keeper role is the oldest one in the library. Members of
          this role may open the cold store and lend rare seed packets to
          the public.

   sorter
          The sorter role exists for weekend helpers. Members of this role
          may label incoming packets but never lend them.

   warden
          Historically, wardens audited the stock every spring. The role
          had code 41 in the old register.
"""


def test_a_sentence_of_an_explanation_is_quoted_under_its_term() -> None:
    kept = list(sources({"roles.txt": ROLES}))
    answer = compose("Which volunteers may lend rare seed packets to the public?", kept, FakeEmbedder().embed)
    assert not answer.no_answer, answer.text
    assert "keeper: Members of this role may open the cold store" in answer.text
    assert "sorter:" not in answer.text.split("\n")[0]


def test_a_short_sentence_that_names_nothing_is_found_through_its_term() -> None:
    kept = list(sources({"roles.txt": ROLES}))
    answer = compose("What code did the warden role have in the old register?", kept, FakeEmbedder().embed)
    assert not answer.no_answer, answer.text
    assert "warden: The role had code 41 in the old register." in answer.text


def test_a_sentence_that_names_its_term_is_quoted_as_written() -> None:
    kept = list(sources({"roles.txt": ROLES}))
    answer = compose("Who is the sorter role for?", kept, FakeEmbedder().embed)
    assert "The sorter role exists for weekend helpers." in answer.text
    assert "sorter: The sorter role" not in answer.text


LEVELS = """Debugging the indexer

   The indexer reads the SEEDLOG variable as a number; each bit
   turns on one kind of message.
  Name         Value    Meaning
  ---------------------------------------------------------
  FETCH            1    Report every packet fetched from the store
  LEND             2    Report each loan as it is recorded
  AUDIT          512    Report which shelves the spring audit counted
  SHELF         1024    Report which shelf files are loaded

   Add the values of the messages you want together.
"""


def test_a_row_of_a_plain_text_table_is_quoted_on_its_own() -> None:
    # Without the table, the rows were one long run-on "sentence" that no question matched well.
    kept = list(sources({"indexer.txt": LEVELS}))
    answer = compose("Which value reports which shelf files get loaded?", kept, FakeEmbedder().embed)
    assert not answer.no_answer, answer.text
    assert "SHELF" in answer.text and "1024" in answer.text
    assert "AUDIT" not in answer.text, answer.text


VAULT = """# Seed vault

The vault sorts its drawers into ranges:

1. 100…199 → drawers for grain seeds. This range sits low, so that the
   carts reach it without a ladder. And we keep some space
   free for later. The keeper labels each drawer by hand.

2. 500…599 → drawers for flower seeds, opened with the brass key. When the
   `--spring` flag is given the sorter moves them to the front.
"""


def test_a_chunk_that_starts_inside_a_line_has_no_term_at_its_start() -> None:
    # A chunk cut at a sentence mid-line: its first words over the indented rest of a wrapped list
    # item look like a term over its explanation; only the document, not the chunk, says they are not.
    start = VAULT.index("And we keep")
    whole = next(sources({"vault.md": VAULT}))
    cut = replace(whole, text=VAULT[start:], location=replace(whole.location, char_start=start))
    answer = compose("Which flag makes the sorter move flower seeds to the front?", [cut], FakeEmbedder().embed)
    assert "`--spring` flag is given the sorter moves them to the front" in answer.text, answer.text
    assert "And we keep some space:" not in answer.text, answer.text
