"""Prompt assembly. Prompts live in files (prompts/); this module only fills them in.

Sources go in the user turn, right before the question, numbered and fenced: small models follow
them there far more reliably than in a long system prompt, and the fence plus the "untrusted" label
keeps retrieved text from passing as instructions.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from app.llm.base import Message
from app.rag.sanitize import strip_control

PROMPTS = Path(__file__).parent / "prompts"


@cache
def template(name: str) -> str:
    return (PROMPTS / f"{name}.txt").read_text(encoding="utf-8").strip()


@dataclass(frozen=True)
class Source:
    number: int
    document: str
    location: str
    text: str


def system_message(session_prompt: str) -> Message:
    extra = strip_control(session_prompt).strip()
    return Message("system", template("system") + (f"\n\n{extra}" if extra else ""))


def format_source(source: Source) -> str:
    body = strip_control(source.text).strip()
    name = strip_control(source.document).replace('"', "'")
    location = strip_control(source.location).replace('"', "'")  # headings come from the document too
    return f'<source id="{source.number}" document="{name}" location="{location}">\n{body}\n</source>'


def user_turn(question: str, sources: list[Source], *, rag: bool, cite: bool) -> Message:
    if not rag:
        return Message("user", question)
    if not sources:
        return Message("user", template("no_context").format(question=question))
    text = template("sources").format(
        sources="\n\n".join(format_source(s) for s in sources),
        question=question,
        instruction=template("cite" if cite else "no_cite"),
    )
    return Message("user", text)
