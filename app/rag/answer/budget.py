"""Fit a prompt into the model's context window.

Reserved first: the answer (max_answer_tokens), the system prompt and the question with its
instructions. Then context chunks enter in rank order until one does not fit (it and every later
one are cut as over budget: skipping ahead would reorder by size, not relevance). History fills
what is left, newest turn first; older turns are dropped. The assembled prompt is then counted with
the model's own chat template and trimmed further if the template's overhead pushed it over.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from app.errors import ValidationError
from app.llm import token_counts
from app.llm.base import ChatModel, Message
from app.rag.prompting import Source, format_source, system_message, user_turn
from app.rag.sanitize import strip_control

PER_MESSAGE_OVERHEAD = 8  # role markers of a chat template, before the exact recount


@dataclass
class BudgetReport:
    context_window: int
    answer_reserve: int
    prompt_tokens: int = 0
    context_tokens: int = 0
    chunks_over_budget: list[int] = field(default_factory=list)  # source numbers cut
    history_dropped: int = 0
    tokenizer: str = ""
    exact: bool = True


@dataclass
class Prompt:
    messages: list[Message]
    sources: list[Source]
    report: BudgetReport


def build(
    model: ChatModel,
    *,
    session_prompt: str,
    history: Sequence[Message],
    question: str,
    sources: Sequence[Source],
    rag: bool,
    cite: bool,
    answer_reserve: int,
) -> Prompt:
    tok = token_counts.cached(model.tokenizer)  # history, sources and the system prompt recur across turns
    window = model.context_window
    report = BudgetReport(window, answer_reserve, tokenizer=tok.name, exact=tok.exact)
    system = system_message(session_prompt)
    # The question inside its template, with one empty source standing for the fences and labels.
    frame = user_turn(question, [Source(1, "", "", "")] if rag else [], rag=rag, cite=cite)
    fixed = tok.count(system.content) + tok.count(frame.content) + 2 * PER_MESSAGE_OVERHEAD
    available = window - answer_reserve - fixed
    if available < 0:
        raise ValidationError(
            "content",
            f"the message needs about {fixed} tokens; with {answer_reserve} reserved for the answer it does not "
            f"fit the model's context window of {window} tokens",
        )
    kept: list[Source] = []
    for source in sources:
        cost = tok.count(format_source(source)) + 2
        if cost > available or report.chunks_over_budget:
            report.chunks_over_budget.append(source.number)
            continue
        kept.append(source)
        available -= cost
        report.context_tokens += cost
    # Stored answers are model output, which may echo a document's control tokens: clean them too.
    cleaned = [Message(m.role, strip_control(m.content)) for m in history]
    turns = _fit_history(cleaned, available, tok.count, report)
    return _finalise(model, system, turns, question, kept, rag, cite, report)


def _fit_history(
    history: Sequence[Message], available: int, count: Callable[[str], int], report: BudgetReport
) -> list[Message]:
    kept: list[Message] = []
    for message in reversed(history):
        cost = count(message.content) + PER_MESSAGE_OVERHEAD
        if cost > available:
            break
        kept.append(message)
        available -= cost
    report.history_dropped = len(history) - len(kept)
    kept.reverse()
    # A conversation must not start with an orphan assistant turn.
    while kept and kept[0].role == "assistant":
        kept.pop(0)
        report.history_dropped += 1
    return kept


def _finalise(
    model: ChatModel,
    system: Message,
    turns: list[Message],
    question: str,
    kept: list[Source],
    rag: bool,
    cite: bool,
    report: BudgetReport,
) -> Prompt:
    limit = report.context_window - report.answer_reserve
    while True:
        messages = [system, *turns, user_turn(question, kept, rag=rag, cite=cite)]
        report.prompt_tokens = model.count_message_tokens(messages)
        if report.prompt_tokens <= limit or not (turns or kept):
            return Prompt(messages, kept, report)
        if turns:  # the template's overhead was more than estimated: drop the oldest turn first
            turns.pop(0)
            report.history_dropped += 1
        else:
            report.chunks_over_budget.insert(0, kept.pop().number)
            tokenizer = token_counts.cached(model.tokenizer)
            report.context_tokens = sum(tokenizer.count(format_source(s)) + 2 for s in kept)
