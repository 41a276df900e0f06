"""Input hygiene for everything that reaches a model: the message, the history, retrieved text.

Chat-template control tokens are removed so text can never open a fake turn (``<|im_start|>system``)
or close the real one. What cannot be stripped — instructions written in plain words — is handled
by the prompt, which fences retrieved text and labels it untrusted (see prompting.py).
"""

from __future__ import annotations

import re

from app.errors import ValidationError

CONTROL_TOKENS = re.compile(
    r"<\|[A-Za-z0-9_\-\s]{1,40}\|>"  # <|im_start|> <|im_end|> <|system|> <|eot_id|> <|endoftext|> ...
    r"|\[/?INST\]|<<\s*/?\s*SYS\s*>>"  # Llama 2
    r"|</?s>|<start_of_turn>|<end_of_turn>|<bos>|<eos>"  # sentencepiece / Gemma
    r"|</?source[^>]*>",  # our own source fences (prompting.py)
    re.IGNORECASE,
)
# Zero-width and bidi controls can hide text from a reader; strip them, keep ordinary whitespace:
# every code point of Unicode category Cc (control) or Cf (format) but "\n" and "\t". Spelled out
# as ranges (Unicode 14, Python 3.11's unicodedata) so one regex pass removes them, rather than a
# category lookup per character, which cost a chat turn milliseconds on its sources;
# tests/rag/test_sanitize.py checks the ranges against unicodedata.
INVISIBLE_RANGES = (
    (0x0, 0x8), (0xB, 0x1F), (0x7F, 0x9F), (0xAD, 0xAD), (0x600, 0x605), (0x61C, 0x61C), (0x6DD, 0x6DD),
    (0x70F, 0x70F), (0x890, 0x891), (0x8E2, 0x8E2), (0x180E, 0x180E), (0x200B, 0x200F), (0x202A, 0x202E),
    (0x2060, 0x2064), (0x2066, 0x206F), (0xFEFF, 0xFEFF), (0xFFF9, 0xFFFB), (0x110BD, 0x110BD),
    (0x110CD, 0x110CD), (0x13430, 0x13438), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
)  # fmt: skip
_INVISIBLE = re.compile("[" + "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in INVISIBLE_RANGES) + "]")


def strip_control(text: str) -> str:
    # Invisible characters go first: "<|im\u200b_start|>" would otherwise become a token once they
    # are gone. Then tokens, until none is left: removing "<|x|>" from "<|im_<|x|>start|>" joins
    # a new one. Each pass shortens the text, so this ends.
    cleaned = _INVISIBLE.sub("", text)
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
