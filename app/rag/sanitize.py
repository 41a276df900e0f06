"""Input hygiene for everything that reaches a model: the message, the history, retrieved text.

Chat-template control tokens are removed so text can never open a fake turn (``<|im_start|>system``)
or close the real one. What cannot be stripped — instructions written in plain words — is handled
by the prompt, which fences retrieved text and labels it untrusted (see prompting.py).
"""

from __future__ import annotations

import re
import unicodedata

from app.errors import ValidationError

CONTROL_TOKENS = re.compile(
    r"<\|[A-Za-z0-9_\-\s]{1,40}\|>"  # <|im_start|> <|im_end|> <|system|> <|eot_id|> <|endoftext|> ...
    r"|\[/?INST\]|<<\s*/?\s*SYS\s*>>"  # Llama 2
    r"|</?s>|<start_of_turn>|<end_of_turn>|<bos>|<eos>"  # sentencepiece / Gemma
    r"|</?source[^>]*>",  # our own source fences (prompting.py)
    re.IGNORECASE,
)
# Zero-width and bidi controls can hide text from a reader; strip them, keep ordinary whitespace.
_INVISIBLE = {"Cf"}
_KEEP = {"\n", "\t"}


def strip_control(text: str) -> str:
    # Invisible characters go first: "<|im\u200b_start|>" would otherwise become a token once they
    # are gone. Then tokens, until none is left: removing "<|x|>" from "<|im_<|x|>start|>" joins
    # a new one. Each pass shortens the text, so this ends.
    cleaned = "".join(ch for ch in text if ch in _KEEP or unicodedata.category(ch) not in _INVISIBLE | {"Cc"})
    while True:
        shorter = CONTROL_TOKENS.sub("", cleaned)
        if shorter == cleaned:
            return cleaned
        cleaned = shorter


_LINE_BREAKS = str.maketrans(dict.fromkeys("\n\t\u2028\u2029", " "))


def clean_name(name: str) -> str:
    """A document name as it will be stored and shown: cleaned as a message is (control, invisible and
    bidi-control characters and chat-template tokens removed; an ESC can no longer colour a
    terminal, nor U+202E show "report\u202egnp.exe" as "reportexe.png"), on one line, stripped.
    May be empty: the caller refuses that."""
    return strip_control(name.translate(_LINE_BREAKS)).strip()


def clean_message(content: str, max_chars: int) -> str:
    """The user's message as it will be stored and sent: control tokens stripped, length checked."""
    if len(content) > max_chars:
        raise ValidationError("content", f"message is {len(content)} characters; the limit is {max_chars}")
    cleaned = strip_control(content).strip()
    if not cleaned:
        raise ValidationError("content", "message must not be empty")
    return cleaned
