"""A streamed token's result built once per subscription's shape (app/graphql/token_events.py)
is the one graphql-core's execution of the selection set gives, to the byte, whatever the document
asks; what it cannot answer exactly takes the normal path."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from graphql import ExecutionResult, parse, validate
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

from app.container import Container
from app.graphql.schema import build_schema
from app.graphql.subscriptions import ChatDone, ChatToken
from app.graphql.token_events import TokenEventExecutor, TokenShape
from app.settings import ApiSettings, Settings
from tests.fakes import FakeChatModel, FakeEmbedder, FakeModels
from tests.graphql.client import Api, live_api
from tests.graphql.ops import ADD_DOC, CREATE_PROJECT, CREATE_SESSION

HEAD = "subscription($s: ID!, $c: String!) { chat(sessionId: $s, content: $c) "
SWITCHED = "subscription($s: ID!, $c: String!, $no: Boolean!) { chat(sessionId: $s, content: $c) "
DOCUMENTS = {
    "plain": HEAD + "{ ... on ChatToken { text } } }",
    "all fields, typename first": HEAD + "{ __typename ... on ChatToken { messageId text } } }",
    "aliases and a field twice": HEAD + "{ kind: __typename ... on ChatToken { t: text id: messageId text } } }",
    "root alias": 'subscription { stream: chat(sessionId: "1", content: "q") { ... on ChatToken { text } } }',
    "named fragment": HEAD + "{ ...Piece } } fragment Piece on ChatToken { messageId text __typename }",
    "fragments on the union and on other members": HEAD
    + "{ ... on ChatEvent { __typename } ... on ChatDone { answer { id } } ... on ChatToken { text }"
    + " ... on ChatError { code message } } }",
    "skip and include": SWITCHED
    + "{ ... on ChatToken { text @skip(if: $no) messageId @include(if: $no) } __typename @include(if: true) } }",
    "only the typename": HEAD + "{ __typename } }",
}
TOKENS = [
    ChatToken(message_id="12", text="Penguins"),
    ChatToken(message_id="12", text=' huddle, "close" \u00e9\u2014 \n\t[1]'),
    ChatToken(message_id="12", text=""),
]


def _executor(executor_class: type, document: str, variables: dict[str, Any]) -> Any:
    schema = build_schema(ApiSettings())._schema
    parsed = parse(document)
    assert not validate(schema, parsed)
    executor = executor_class.build(schema, parsed, raw_variable_values=variables)
    assert not isinstance(executor, list), executor
    return executor


def _event(executor: Any, event: object) -> ExecutionResult:
    result = executor.build_per_event_executor(event).execute_operation(False)
    assert isinstance(result, ExecutionResult)
    return result


def _result(executor_class: type, document: str, event: object, variables: dict[str, Any]) -> ExecutionResult:
    return _event(_executor(executor_class, document, variables), event)


def _wire(result: ExecutionResult) -> str:
    # As the websocket sends it (starlette's send_json): key order and escapes count.
    payload = {"data": result.data, **({"errors": [e.formatted for e in result.errors]} if result.errors else {})}
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False)


@pytest.mark.parametrize("name", DOCUMENTS)
@pytest.mark.parametrize("no", [False, True])
def test_a_token_event_is_sent_as_execution_would(name: str, no: bool) -> None:
    document = DOCUMENTS[name]
    variables = {"s": "1", "c": "q"} if "$s" in document else {}
    if "$no" in document:
        variables["no"] = no
    fast_path = _executor(TokenEventExecutor, document, variables)
    for token in TOKENS:
        fast = _event(fast_path, token)
        slow = _result(StrawberryGraphQLCoreExecutionContext, document, token, variables)
        assert _wire(fast) == _wire(slow) and fast.data, name
    assert isinstance(fast_path.token_shape[0], TokenShape), "the tokens were not built from the shape"


def test_the_shape_is_worked_out_once_per_subscription_and_used_for_each_token() -> None:
    executor = _executor(TokenEventExecutor, DOCUMENTS["aliases and a field twice"], {"s": "1", "c": "q"})
    assert executor.token_shape == []  # not before the first token
    results = [_event(executor, token).data for token in TOKENS]
    assert results[1] == {"chat": {"kind": "ChatToken", "t": TOKENS[1].text, "id": "12", "text": TOKENS[1].text}}
    shape = executor.token_shape[0]
    assert isinstance(shape, TokenShape) and shape.root_key == "chat"
    assert [key for key, *_ in shape.fields] == ["kind", "t", "id", "text"]


def test_other_events_and_null_values_take_the_normal_path() -> None:
    document = DOCUMENTS["all fields, typename first"]
    variables = {"s": "1", "c": "q"}
    broken = ChatToken(message_id="3", text=None)  # type: ignore[arg-type]
    fast, slow = (
        _result(cls, document, broken, variables) for cls in (TokenEventExecutor, StrawberryGraphQLCoreExecutionContext)
    )
    assert fast.errors and _wire(fast) == _wire(slow)  # execution's own error for a null in a non-null field
    done = ChatDone(answer=None)  # type: ignore[arg-type]
    assert _wire(_result(TokenEventExecutor, document, done, variables)) == _wire(
        _result(StrawberryGraphQLCoreExecutionContext, document, done, variables)
    )


def test_a_subscription_it_cannot_answer_exactly_has_no_shape() -> None:
    schema = build_schema(ApiSettings())._schema
    document = HEAD + "{ ... on ChatToken { text } } }"
    executor = TokenEventExecutor.build(
        schema, parse(document), raw_variable_values={"s": "1", "c": "q"}, middleware=[_Upper()]
    )
    assert isinstance(executor, TokenEventExecutor)
    result = executor.build_per_event_executor(TOKENS[0]).execute_operation(False)
    assert executor.token_shape == [None]
    assert isinstance(result, ExecutionResult) and result.data == {"chat": {"text": "PENGUINS"}}


class _Upper:
    """Resolver middleware (a schema extension's ``resolve`` hook): it must see every field."""

    def resolve(self, next_: Any, root: Any, info: Any, **args: Any) -> Any:
        value = next_(root, info, **args)
        return value.upper() if isinstance(value, str) and info.field_name == "text" else value


def test_unknown_fields_are_refused_before_any_event() -> None:
    schema = build_schema(ApiSettings())._schema
    errors = validate(schema, parse(HEAD + "{ ... on ChatToken { text nope } } }"))
    assert [e.message for e in errors] == ["Cannot query field 'nope' on type 'ChatToken'."]


# Without message ids and dates, which differ from one answer to the next.
OVER_THE_WIRE = (
    HEAD + "{ kind: __typename ... on ChatEvent { __typename } ... on ChatToken { piece: text text }"
    " ... on ChatDone { answer { content status } } ... on ChatRetrieval { noContext } } }"
)
ANSWER = 'Penguins huddle "close" together \u00e9\u2014 [1].'


def _frames(api: Api, session: str) -> list[str]:
    """The raw text of each ``next`` frame of one chat subscription, as the socket sent it."""
    with api.websocket() as ws:
        payload = {"query": OVER_THE_WIRE, "variables": {"s": session, "c": "How do penguins keep warm?"}}
        ws.ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": payload}))
        frames = []
        while True:
            frame = ws.ws.recv(timeout=30)
            assert isinstance(frame, str)
            kind = json.loads(frame)["type"]
            if kind == "complete":
                return frames
            assert kind == "next", frame
            frames.append(frame)


def _canonical(frames: list[str]) -> tuple[list[str], str]:
    """The frames with each token's text taken out (how tokens were batched is timing), and the text."""
    shapes: list[str] = []
    text = ""
    for frame in frames:
        event = json.loads(frame)["payload"]["data"]["chat"]
        if event["kind"] == "ChatToken":
            assert event["piece"] == event["text"]
            text += event["text"]
            encoded = re.escape(json.dumps(event["text"], ensure_ascii=False))
            frame = re.sub(encoded, '"<text>"', frame)
            if shapes and shapes[-1] == frame:
                continue
        shapes.append(frame)
    return shapes, text


def _session(api: Api, name: str) -> str:
    project = api.run(CREATE_PROJECT, name=name)["createProject"]["id"]
    api.run(ADD_DOC, p=project, name="penguins.md", text="# Penguins\n\nEmperor penguins huddle in the winter.")
    settings = {"provider": "fake", "model": "scripted", "threshold": 0.1}
    return str(api.run(CREATE_SESSION, p=project, input=settings)["createChatSession"]["id"])


def test_the_chat_subscription_sends_the_same_frames_with_and_without_it(migrated: Settings) -> None:
    runs = []
    for preresolved in (True, False):
        api_settings = migrated.api.model_copy(update={"preresolved_token_events": preresolved})
        model = FakeChatModel()
        model.enqueue(ANSWER)
        settings = migrated.model_copy(update={"api": api_settings})
        container = Container.build(settings, embedder=FakeEmbedder(), chat_models=FakeModels(model))
        try:
            with live_api(container) as api:
                runs.append(_canonical(_frames(api, _session(api, f"kb {preresolved}"))))
        finally:
            container.close()
    (fast, text), (slow, slow_text) = runs
    assert text == slow_text == ANSWER
    assert fast == slow and any('"<text>"' in frame for frame in fast)
