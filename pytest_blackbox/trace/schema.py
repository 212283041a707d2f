"""Validation against ``schemas/trace-v2.schema.json``, the one description of the cassette's shape.

``jsonschema`` is ten times slower than parsing and hashing a large cassette, so whether a document
is valid is decided by plain Python checks compiled from the same schema file (refusing any keyword
it does not know, so the schema cannot grow a rule the fast check skips); ``jsonschema`` runs only on
failure, to name the pointer and the rule. See docs/cassette-format.md#the-schema.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import BlackboxError, CassetteSchemaError
from .errors import where as shown_where

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped,unused-ignore]
    from jsonschema.exceptions import ValidationError  # type: ignore[import-untyped,unused-ignore]

__all__ = ["schema_path", "validate_schema"]

_SCHEMA_FILE = "trace-v2.schema.json"

Check = Callable[[Any], bool]


def schema_path() -> Path:
    """The packaged schema in a wheel, else the repository's ``schemas/`` copy (editable installs)."""
    packaged = Path(__file__).with_name(_SCHEMA_FILE)
    if packaged.is_file():
        return packaged
    return Path(__file__).resolve().parents[2] / "schemas" / _SCHEMA_FILE


@lru_cache(maxsize=1)
def _schema() -> dict[str, Any]:
    path = schema_path()
    try:
        loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BlackboxError(
            f"the trace v2 schema `{path}` could not be read ({exc.__class__.__name__}); "
            "reinstall pytest-blackbox"
        ) from exc
    return loaded


# --------------------------------------------------------------------------------------------
# The compiler: schema node -> predicate, for exactly the keywords the schema uses.

_ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "title", "description", "$defs"})
_SUPPORTED = _ANNOTATIONS | {
    "$ref",
    "type",
    "const",
    "enum",
    "pattern",
    "minLength",
    "maxLength",
    "minimum",
    "items",
    "minItems",
    "required",
    "properties",
    "additionalProperties",
    "allOf",
    "oneOf",
    "if",
    "then",
}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_integer(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


#: JSON Schema type -> Python types of parsed JSON (``bool`` is kept apart from the numbers).
_PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "null": (type(None),),
    "boolean": (bool,),
    "number": (int, float),
}


def _always(value: Any) -> bool:
    return True


def _all_of(checks: list[Check]) -> Check:
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]

    def check(value: Any) -> bool:
        for c in checks:  # noqa: SIM110 (a plain loop: this runs for every node of every cassette)
            if not c(value):
                return False
        return True

    return check


def _scalar_equal(expected: Any) -> Check:
    """JSON Schema equality for a scalar: ``true`` is not ``1``, ``2.0`` is ``2``."""
    if isinstance(expected, str):
        return lambda v: isinstance(v, str) and v == expected
    if expected is None or isinstance(expected, bool):
        return lambda v: v is expected
    if _is_number(expected):
        return lambda v: _is_number(v) and v == expected
    raise ValueError(f"schema compiler: only scalar const/enum values are supported, not {expected!r}")


def _one_of_values(values: list[Any]) -> Check:
    if all(isinstance(v, str) for v in values):
        strings = frozenset(values)
        return lambda v: isinstance(v, str) and v in strings
    options = [_scalar_equal(item) for item in values]
    return lambda v: any(o(v) for o in options)


class _Compiler:
    def __init__(self, root: dict[str, Any]) -> None:
        self.defs: dict[str, Any] = root.get("$defs", {})
        self.compiled: dict[str, Check] = {}
        for name in self.defs:  # refs look their target up at call time, so order does not matter
            self.compiled[name] = self.node(self.defs[name])
        self.root = self.node(root)

    def node(self, schema: Any) -> Check:
        if schema is True:
            return _always
        if not isinstance(schema, dict):
            raise ValueError(f"schema compiler: unsupported schema {schema!r}")
        unknown = set(schema) - _SUPPORTED
        if unknown or ("if" in schema) != ("then" in schema):
            raise ValueError(f"schema compiler: unsupported keywords {sorted(unknown) or ['if/then']}")
        checks: list[Check] = []
        if "$ref" in schema:
            checks.append(self._ref(schema["$ref"]))
        object_only = schema.get("type") == "object"
        if "type" in schema and not object_only:
            checks.append(self._type(schema["type"]))
        if "const" in schema:
            checks.append(_scalar_equal(schema["const"]))
        if "enum" in schema:
            checks.append(_one_of_values(schema["enum"]))
        checks.extend(self._string(schema))
        if "minimum" in schema:
            low = schema["minimum"]
            checks.append(lambda v: not _is_number(v) or v >= low)
        checks.extend(self._array(schema))
        if object_only or {"required", "properties", "additionalProperties"} & set(schema):
            checks.append(self._object(schema, strict=object_only))
        if "allOf" in schema:
            checks.append(self._all_of(schema["allOf"]))
        if "oneOf" in schema:
            branches = [self.node(s) for s in schema["oneOf"]]
            checks.append(lambda v: sum(1 for b in branches if b(v)) == 1)
        if "if" in schema:
            condition, then = self.node(schema["if"]), self.node(schema["then"])
            checks.append(lambda v: not condition(v) or then(v))
        return _all_of(checks)

    def _ref(self, ref: str) -> Check:
        prefix = "#/$defs/"
        if not ref.startswith(prefix) or ref[len(prefix) :] not in self.defs:
            raise ValueError(f"schema compiler: unsupported $ref {ref!r}")
        name, compiled = ref[len(prefix) :], self.compiled
        return lambda v: compiled[name](v)

    @staticmethod
    def _type(kind: str | list[str]) -> Check:
        kinds = {kind} if isinstance(kind, str) else set(kind)
        if "integer" in kinds and "number" not in kinds:
            if len(kinds) > 1:
                raise ValueError("schema compiler: 'integer' is supported only alone or next to 'number'")
            return _is_integer
        python = tuple(t for k in kinds - {"integer"} for t in _PYTHON_TYPES[k])
        if "boolean" in kinds or not {"number", "integer"} & kinds:
            return lambda v: isinstance(v, python)
        return lambda v: isinstance(v, python) and not isinstance(v, bool)

    @staticmethod
    def _string(schema: dict[str, Any]) -> Iterator[Check]:
        if "pattern" in schema:
            search = re.compile(schema["pattern"]).search
            yield lambda v: not isinstance(v, str) or search(v) is not None
        if "minLength" in schema:
            shortest = schema["minLength"]
            yield lambda v: not isinstance(v, str) or len(v) >= shortest
        if "maxLength" in schema:
            longest = schema["maxLength"]
            yield lambda v: not isinstance(v, str) or len(v) <= longest

    def _array(self, schema: dict[str, Any]) -> Iterator[Check]:
        if "minItems" in schema:
            fewest = schema["minItems"]
            yield lambda v: not isinstance(v, list) or len(v) >= fewest
        if "items" in schema and schema["items"] is not True:
            item = self.node(schema["items"])

            def items(value: Any) -> bool:
                if isinstance(value, list):
                    for element in value:
                        if not item(element):
                            return False
                return True

            yield items

    def _object(self, schema: dict[str, Any], *, strict: bool) -> Check:
        """Object keywords; ``strict`` also does ``"type": "object"`` (one call instead of two)."""
        required = tuple(schema.get("required", ()))
        properties: dict[str, Any] = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        if extra not in (True, False):
            raise ValueError("schema compiler: unsupported additionalProperties schema (only true or false)")
        allowed = frozenset(properties) if extra is False else None
        members = [(k, self.node(s)) for k, s in properties.items() if s is not True]

        def check(value: Any) -> bool:
            if not isinstance(value, dict):
                return not strict
            for key in required:
                if key not in value:
                    return False
            if allowed is not None and not allowed.issuperset(value):
                return False
            for key, member in members:  # noqa: SIM110 (hot loop, see _all_of)
                if key in value and not member(value[key]):
                    return False
            return True

        return check

    def _all_of(self, entries: list[Any]) -> Check:
        tag = _dispatch_tag(entries)
        if tag is None:
            return _all_of([self.node(e) for e in entries])
        # Every entry is "if <tag> == const then ...": one dict lookup instead of one try per entry.
        table = {e["if"]["properties"][tag]["const"]: self.node(e["then"]) for e in entries}
        every = list(table.values())

        def check(value: Any) -> bool:
            if not isinstance(value, dict):  # an "if" made of required/properties holds vacuously
                return all(c(value) for c in every)
            found = value.get(tag)
            branch = table.get(found) if isinstance(found, str) else None
            return branch is None or branch(value)

        return check


def _dispatch_tag(entries: list[Any]) -> str | None:
    """The discriminating key when every entry is ``if {required:[k], properties:{k:{const:str}}} then``."""
    tags = {_tag_of(entry) for entry in entries}
    if len(tags) != 1 or None in tags:
        return None
    return tags.pop()


def _tag_of(entry: Any) -> str | None:
    if not isinstance(entry, dict) or set(entry) != {"if", "then"}:
        return None
    condition = entry["if"]
    if not isinstance(condition, dict) or set(condition) != {"required", "properties"}:
        return None
    required, properties = condition["required"], condition["properties"]
    if len(required) != 1 or set(properties) != set(required):
        return None
    member = properties[required[0]]
    if not isinstance(member, dict) or set(member) != {"const"} or not isinstance(member["const"], str):
        return None
    return str(required[0])


@lru_cache(maxsize=1)
def _compiled() -> _Compiler:
    return _Compiler(_schema())


def _is_valid_fast(document: Any) -> bool:
    return _compiled().root(document)


# --------------------------------------------------------------------------------------------
# Explaining a failure with jsonschema, without quoting the instance.


@lru_cache(maxsize=1)
def _validators() -> tuple[Draft202012Validator, Draft202012Validator]:
    """Built on the first failure only: valid cassettes never import ``jsonschema`` (about 50 ms)."""
    from jsonschema import Draft202012Validator

    schema = _schema()
    step_schema = {"$schema": schema.get("$schema"), "$defs": schema["$defs"], "$ref": "#/$defs/step"}
    return Draft202012Validator(schema), Draft202012Validator(step_schema)


def _first_error(document: Any) -> tuple[ValidationError, list[str | int]] | None:
    """The most relevant error, looking at the top level first, then at the first bad step."""
    from jsonschema.exceptions import best_match

    whole, one_step = _validators()
    steps = document.get("steps") if isinstance(document, dict) else None
    if isinstance(steps, list):
        error = best_match(whole.iter_errors({**document, "steps": []}))
        if error is not None:
            return error, list(error.absolute_path)
        step_check = _compiled().compiled["step"]
        for index, step in enumerate(steps):
            if not step_check(step):
                error = best_match(one_step.iter_errors(step))
                if error is not None:
                    return error, ["steps", index, *error.absolute_path]
        return None
    error = best_match(whole.iter_errors(document))
    return (error, list(error.absolute_path)) if error is not None else None


_ARTICLES = {
    "object": "an object",
    "array": "an array",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
}
_HASH_PATTERN = "^[0-9a-f]{64}$"


def _quoted(names: list[str]) -> str:
    return ", ".join(f"'{n}'" for n in names)


def _reason(error: ValidationError) -> str:
    """A short reason rebuilt from the rule, never from the instance (it may hold a secret)."""
    rule, value, schema = error.validator, error.validator_value, error.schema
    instance = error.instance
    if rule == "type":
        kinds = [value] if isinstance(value, str) else list(value)
        return "must be " + " or ".join(_ARTICLES.get(k, k) for k in kinds)
    if rule == "required":
        missing = [k for k in value if isinstance(instance, dict) and k not in instance]
        plural = "s" if len(missing) > 1 else ""
        return f"is missing required field{plural} {_quoted(missing)}"
    if rule == "additionalProperties":
        allowed = list(schema.get("properties", {})) if isinstance(schema, dict) else []
        return f"has a field the format does not allow (allowed: {', '.join(allowed)})"
    if rule == "enum":
        return "must be one of " + ", ".join(json.dumps(v) for v in value)
    if rule == "const":
        return f"must be {json.dumps(value)}"
    if rule in ("pattern", "maxLength", "minLength") and schema.get("pattern") == _HASH_PATTERN:
        return "must be 64 lowercase hexadecimal characters"
    if rule == "pattern":
        return f"must match the pattern {value}"
    if rule == "minimum":
        return f"must be {value} or more"
    if rule == "minItems":
        return f"must hold at least {value} item{'s' if value != 1 else ''}"
    if rule == "oneOf" and all(isinstance(b, dict) and set(b) == {"required"} for b in value):
        names = [name for branch in value for name in branch["required"]]
        return f"must have exactly one of {' or '.join(repr(n) for n in names)}"
    return f"breaks the schema rule '{rule}'"


def _pointer(parts: list[str | int]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def validate_schema(doc: Any, *, path: str | None = None) -> None:
    """Raise ``CassetteSchemaError`` unless ``doc`` matches the trace v2 JSON Schema."""
    if _is_valid_fast(doc):
        return
    found = _first_error(doc)
    if found is None:  # the fast check is stricter than jsonschema here; jsonschema is the reference
        return
    error, parts = found
    pointer = _pointer(parts)
    step_index = parts[1] if len(parts) > 1 and parts[0] == "steps" and isinstance(parts[1], int) else None
    where = shown_where(path)
    at = f"{pointer} (step {step_index})" if step_index is not None else (pointer or "the top level")
    raise CassetteSchemaError(
        f"{where} does not match the trace v2 schema at {at}: {_reason(error)}",
        path=path,
        step_index=step_index,
        pointer=pointer,
    )
