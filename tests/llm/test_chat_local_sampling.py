"""The local model's sampling knobs reach llama.cpp: a request's own value wins, else the model's
declared default (``generation_defaults``), else llama.cpp's."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from app.llm.base import GenerationOptions, Message
from app.llm.chat.local import GENERATION_DEFAULTS, SMOLLM2, LocalChatModel, sampling, shipped_models
from tests.llm.chat_wire.streams import collect

pytestmark = [pytest.mark.slow, pytest.mark.requires_llama]

LOOPY = [Message("user", "List the numbers from 1 to 30, one per line.")]  # greedy: "1. 1\n2. 2\n3. 3..."
GREEDY = GenerationOptions(max_tokens=32, temperature=0.0)  # deterministic, so outputs can be compared


@pytest.fixture(scope="module")
def model() -> Iterator[LocalChatModel]:
    yield LocalChatModel(SMOLLM2, shipped_models()[SMOLLM2], context_window=2048, threads=1)


async def test_a_knob_changes_the_output_and_a_request_overrides_the_models_default(model: LocalChatModel) -> None:
    model.generation_defaults = GenerationOptions()
    plain = (await collect(model.stream(LOOPY, GREEDY))).text
    penalised = (await collect(model.stream(LOOPY, replace(GREEDY, repeat_penalty=1.8)))).text
    assert penalised != plain
    model.generation_defaults = GenerationOptions(repeat_penalty=1.8)
    assert (await collect(model.stream(LOOPY, GREEDY))).text == penalised
    assert (await collect(model.stream(LOOPY, replace(GREEDY, repeat_penalty=1.0)))).text == plain


HOTELS = [
    Message("system", "You answer questions using the user's documents. Answer briefly, using only the sources."),
    Message(
        "user",
        '<source id="1" document="travel-policy-2023.md">London: £180 Rest of the UK: £120</source>\n\n'
        "Question: What is the maximum hotel rate per night in the UK outside London under the 2023 travel policy?",
    ),
]


async def test_the_repeat_penalty_spares_digits(model: LocalChatModel) -> None:
    """The answer restates "2023", then must write "£120": llama.cpp's own penalty made it "£18"."""
    model.generation_defaults = GenerationOptions()
    penalised = (await collect(model.stream(HOTELS, replace(GREEDY, max_tokens=40, repeat_penalty=1.1)))).text
    assert "2023" in penalised and "£120" in penalised, penalised


def test_the_shipped_model_declares_its_measured_defaults() -> None:
    built = LocalChatModel(SMOLLM2, shipped_models()[SMOLLM2])
    assert built.generation_defaults == GENERATION_DEFAULTS.get(SMOLLM2, GenerationOptions())
    assert sampling(GenerationOptions(top_p=0.5), GenerationOptions(top_p=0.9, min_p=0.1)) == {
        "top_p": 0.5,
        "min_p": 0.1,
    }
