"""Tool input schemas: what one may hold (checked when a tool is created or changed), and checking a
call's arguments against one, which nothing a schema or a call says can make slow.

- Patterns (``pattern``, ``patternProperties``, and ``additionalProperties`` beside them) match with
  RE2 (google-re2), whose time is linear in the text: Python's ``re`` backtracks, and ``^(a+)+$``
  against 30 characters takes minutes. A pattern RE2 cannot compile (back-references, look-arounds)
  is refused when the tool is defined, naming where it is; one already stored fails its calls.
- A schema is bounded in size, depth and pattern count; arguments in size and depth. Deeper
  arguments are a validation error, never a recursion inside the validator.
- Every keyword the validator applies spends from a fixed budget (a pattern more, by the length of
  the text it reads), so a schema whose subschemas multiply (``allOf`` of ``$ref`` s) ends in a
  validation error rather than running on: the bound is a count, so the same call always ends the
  same way.
- :func:`validate` runs the check in a worker thread of its own small limiter, never on the event
  loop and never in the pool database calls and ``/healthz`` share.
"""

from __future__ import annotations

import contextvars
import json
import weakref
from asyncio import AbstractEventLoop, get_running_loop
from collections.abc import Callable, Iterator, Mapping
from functools import lru_cache
from typing import Any

import anyio
import anyio.to_thread
import re2
from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import SchemaError
from jsonschema.exceptions import ValidationError as SchemaViolation
from referencing.exceptions import Unresolvable

from app.db.models import Tool
from app.errors import ValidationError

SCHEMA_MAX_CHARS = 20_000
SCHEMA_MAX_DEPTH = 32  # objects and arrays nested in a schema
SCHEMA_MAX_PATTERNS = 50
ARGUMENTS_MAX_CHARS = 100_000  # of a call's arguments, as JSON
ARGUMENTS_MAX_DEPTH = 32
CHECK_BUDGET = 100_000  # keyword applications per check (a pattern costs 1 per PATTERN_CHARS of text more)
PATTERN_CHARS = 100
VALIDATION_THREADS = 2

Problems = list[tuple[str, str]]


class _Exhausted(Exception):
    """The check spent its budget."""


_budget: contextvars.ContextVar[list[int]] = contextvars.ContextVar("tool_schema_budget")


def _spend(cost: int) -> None:
    left = _budget.get(None)
    if left is None:
        return  # outside check_arguments (the metaschema check of a schema): nothing to bound
    left[0] -= cost
    if left[0] < 0:
        raise _Exhausted


@lru_cache(maxsize=512)
def _compiled(pattern: str) -> Any:
    options = re2.Options()
    options.log_errors = False  # a refused pattern is reported to the client, not to stderr
    return re2.compile(pattern, options)


def _search(pattern: str, text: str) -> bool:
    _spend(1 + len(text) // PATTERN_CHARS)
    try:
        return _compiled(pattern).search(text) is not None
    except re2.error as exc:
        raise SchemaViolation(f"the pattern {pattern[:100]!r} cannot be used: {_reason(exc)}") from None


def _reason(exc: Exception) -> str:
    text = exc.args[0] if exc.args else exc
    return (text.decode(errors="replace") if isinstance(text, bytes) else str(text))[:200]


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[SchemaViolation]:
    if validator.is_type(instance, "string") and not _search(pattern, instance):
        yield SchemaViolation(f"{instance[:100]!r} does not match {pattern[:100]!r}")


def _pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Iterator[SchemaViolation]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, extra: Any, instance: Any, schema: Any) -> Iterator[SchemaViolation]:
    if not validator.is_type(instance, "object"):
        return
    known, patterns = schema.get("properties", {}), list(schema.get("patternProperties", {}))
    extras = [k for k in instance if k not in known and not any(_search(p, k) for p in patterns)]
    if validator.is_type(extra, "object"):
        for key in extras:
            yield from validator.descend(instance[key], extra, path=key)
    elif not extra and extras:
        yield SchemaViolation(f"additional properties are not allowed ({', '.join(map(repr, sorted(extras)[:20]))})")


def _budgeted(keyword: Callable[..., Any]) -> Callable[..., Any]:
    def apply(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        _spend(1)
        return keyword(validator, value, instance, schema)

    return apply


_OWN = {"pattern": _pattern, "patternProperties": _pattern_properties, "additionalProperties": _additional_properties}
ArgumentsValidator = validators.extend(
    Draft202012Validator,
    {name: _budgeted(_OWN.get(name, keyword)) for name, keyword in Draft202012Validator.VALIDATORS.items()},
)


# --- a schema, when a tool is defined ----------------------------------------------------------


def check_schema(schema: Any) -> Problems:
    """``schema`` is a JSON Schema (Draft 2020-12) of an object, within the bounds above, whose
    patterns RE2 compiles."""
    if not isinstance(schema, dict):
        return [("inputSchema", "must be a JSON object (a JSON Schema)")]
    if depth(schema) > SCHEMA_MAX_DEPTH:
        return [("inputSchema", f"nests objects and arrays at most {SCHEMA_MAX_DEPTH} deep")]
    if len(json.dumps(schema)) > SCHEMA_MAX_CHARS:
        return [("inputSchema", f"must be at most {SCHEMA_MAX_CHARS} characters of JSON")]
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path)
        return [("inputSchema", f"not a valid JSON Schema{f' at {where}' if where else ''}: {exc.message[:200]}")]
    if schema.get("type") != "object":
        return [("inputSchema", 'must describe an object ("type": "object"): a call\'s arguments are named')]
    if outside := _outside_references(schema):
        # Nothing is ever fetched to check a call (and a reference nobody can resolve fails every call).
        return [("inputSchema", f"references only within the schema ('#/...'), not {outside[:100]!r}")]
    return _pattern_problems(schema)


def _pattern_problems(schema: dict[str, Any]) -> Problems:
    found = list(_patterns(schema, ""))
    if len(found) > SCHEMA_MAX_PATTERNS:
        return [("inputSchema", f"at most {SCHEMA_MAX_PATTERNS} patterns")]
    problems: Problems = []
    for where, pattern in found:
        try:
            _compiled(pattern)
        except re2.error as exc:
            problems.append(
                ("inputSchema", f"the pattern at {where} is not one RE2 runs (no back-references or look-arounds): "
                 f"{_reason(exc)}")
            )  # fmt: skip
    if found and _has_key(schema, "unevaluatedProperties") and _has_key(schema, "patternProperties"):
        # The validator applies unevaluatedProperties with Python's re: never together with patterns.
        problems.append(("inputSchema", "unevaluatedProperties cannot be combined with patternProperties"))
    return problems


def _patterns(value: Any, where: str) -> Iterator[tuple[str, str]]:
    """``(path, pattern)`` of every pattern in a schema: ``pattern`` values and ``patternProperties`` keys."""
    stack = [(value, where)]
    while stack:
        node, at = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("pattern"), str):
                yield f"{at}/pattern", node["pattern"]
            if isinstance(node.get("patternProperties"), dict):
                yield from ((f"{at}/patternProperties", key) for key in node["patternProperties"])
            stack.extend((item, f"{at}/{key}") for key, item in node.items())
        elif isinstance(node, list):
            stack.extend((item, f"{at}/{i}") for i, item in enumerate(node))


def _has_key(value: Any, key: str) -> bool:
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if key in node:
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def _outside_references(value: Any) -> str | None:
    """The first ``$ref``/``$dynamicRef`` that points outside the schema itself, if any."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, item in node.items():
                if key in ("$ref", "$dynamicRef") and isinstance(item, str) and not item.startswith("#"):
                    return item
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return None


def depth(value: Any) -> int:
    """How deep objects and arrays nest in a JSON value (a scalar: 0), counted without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, level)
            stack.extend((item, level + 1) for item in (node.values() if isinstance(node, dict) else node))
    return deepest


# --- a call's arguments --------------------------------------------------------------------------


def check_arguments(tool: Tool, arguments: str | Mapping[str, Any]) -> dict[str, Any]:
    """The call's arguments as an object valid against the tool's schema; ValidationError naming
    every problem (``arguments.top_k``) otherwise. Blocking: async callers use :func:`validate`."""
    parsed = _parsed(arguments)
    budget = _budget.set([CHECK_BUDGET])
    try:
        found = list(ArgumentsValidator(tool.input_schema).iter_errors(parsed))
    except Unresolvable as exc:  # a reference inside the schema that leads nowhere (0011 refuses new ones)
        raise ValidationError("arguments", f"the tool's schema cannot be applied: {exc}") from None
    except _Exhausted:
        raise ValidationError("arguments", "too much work to check against the tool's schema: send less") from None
    except RecursionError:  # a schema that refers to itself without reading deeper into the arguments
        raise ValidationError("arguments", "the tool's schema refers to itself without end") from None
    finally:
        _budget.reset(budget)
    errors = sorted(found, key=lambda e: [str(p) for p in e.absolute_path])
    problems = [(".".join(["arguments", *map(str, e.absolute_path)]), e.message[:300]) for e in errors]
    if problems:
        (field, message), *more = problems
        raise ValidationError(field, message, more=more)
    return parsed


def _parsed(arguments: str | Mapping[str, Any]) -> dict[str, Any]:
    try:
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    except RecursionError:
        raise ValidationError("arguments", f"nest objects and arrays at most {ARGUMENTS_MAX_DEPTH} deep") from None
    except (TypeError, ValueError) as exc:
        raise ValidationError("arguments", f"not JSON: {exc}") from None
    if len(text) > ARGUMENTS_MAX_CHARS:
        raise ValidationError("arguments", f"must be at most {ARGUMENTS_MAX_CHARS} characters of JSON")
    try:
        parsed = json.loads(text or "{}")
    except json.JSONDecodeError as exc:
        raise ValidationError("arguments", f"not valid JSON: {exc.msg} at character {exc.pos}") from None
    except RecursionError:
        raise ValidationError("arguments", f"nest objects and arrays at most {ARGUMENTS_MAX_DEPTH} deep") from None
    if not isinstance(parsed, dict):
        raise ValidationError("arguments", f"must be a JSON object, not a {type(parsed).__name__}")
    if depth(parsed) > ARGUMENTS_MAX_DEPTH:
        raise ValidationError("arguments", f"nest objects and arrays at most {ARGUMENTS_MAX_DEPTH} deep")
    return parsed


_limiters: weakref.WeakKeyDictionary[AbstractEventLoop, anyio.CapacityLimiter] = weakref.WeakKeyDictionary()


def _limiter() -> anyio.CapacityLimiter:
    loop = get_running_loop()
    if (found := _limiters.get(loop)) is None:
        found = _limiters[loop] = anyio.CapacityLimiter(VALIDATION_THREADS)
    return found


async def validate(tool: Tool, arguments: str | Mapping[str, Any]) -> dict[str, Any]:
    """:func:`check_arguments` in a worker thread of the validation limiter."""
    return await anyio.to_thread.run_sync(check_arguments, tool, arguments, limiter=_limiter())
