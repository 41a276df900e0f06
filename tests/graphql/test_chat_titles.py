"""A chat nobody named is named by its first question (short, deterministic, no model asked); a
chat someone named keeps its name; a later question renames nothing."""

from __future__ import annotations

from app.services.chat.store import TITLE_CHARS, title_of
from tests.graphql.client import Api
from tests.graphql.ops import CREATE_PROJECT, CREATE_SESSION, SEND

TITLE = "query($id: ID!) { chatSession(id: $id) { ... on ChatSession { title } } }"


def test_a_title_is_the_first_line_cut_at_a_word() -> None:
    assert title_of("  How do   penguins\tsurvive winter? \nMore detail here.") == "How do penguins survive winter?"
    long = "Which of the deployment runbooks covers rolling back a database migration after a failed release?"
    cut = title_of(long)
    assert len(cut) <= TITLE_CHARS and cut.endswith("…") and long.startswith(cut[:-1])
    assert title_of("x" * 200) == "x" * (TITLE_CHARS - 1) + "…"


def test_an_unnamed_chat_takes_its_first_questions_title(api: Api) -> None:
    project = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
    unnamed = api.run(CREATE_SESSION, p=project, input={"provider": "fake", "model": "scripted"})["createChatSession"]
    named = api.run(CREATE_SESSION, p=project, input={"provider": "fake", "model": "scripted", "title": "Mine"})[
        "createChatSession"
    ]
    assert api.run(TITLE, id=unnamed["id"])["chatSession"]["title"] == "New chat"
    for chat in (unnamed, named):
        api.run(SEND, s=chat["id"], c="How do penguins survive winter?")
        api.run(SEND, s=chat["id"], c="And owls?")
    assert api.run(TITLE, id=unnamed["id"])["chatSession"]["title"] == "How do penguins survive winter?"
    assert api.run(TITLE, id=named["id"])["chatSession"]["title"] == "Mine"
