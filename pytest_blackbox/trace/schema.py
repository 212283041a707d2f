"""Validation against ``schemas/trace-v2.schema.json``, the one description of the cassette's shape.

``jsonschema`` is ten times slower than parsing and hashing a large cassette, so whether a document
is valid is decided by plain Python checks compiled from the same schema file (refusing any keyword
it does not know, so the schema cannot grow a rule the fast check skips); ``jsonschema`` runs only on
failure, to name the pointer and the rule. See docs/cassette-format.md#the-schema.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from .errors import BlackboxError, CassetteSchemaError
from .errors import where as shown_where

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped,unused-ignore]
    from jsonschema.exceptions import ValidationError  # type: ignore[import-untyped,unused-ignore]

__all__ = ["schema_path", "validate_schema", "validate_step", "validate_top_level"]

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


class _Compiler:
    """Schema -> Python source, one function per ``$defs`` entry, each check an inline expression.

    Generated source rather than nested closures, because the check runs on every node of every
    step of every cassette verified: one function call per definition instead of one per keyword.
    :attr:`text` is that source as a module (:func:`checks_module_text`); ``DEFINITIONS[name]`` in it
    is the check of ``#/$defs/name`` and ``ROOT`` the check of the whole schema.
    """

    def __init__(self, root: dict[str, Any]) -> None:
        self.defs: dict[str, Any] = root.get("$defs", {})
        self.names = {name: f"_def_{index}" for index, name in enumerate(self.defs)}
        self.source: list[str] = []
        self.constants: list[str] = []
        self.dispatch: list[str] = []
        for name, schema in self.defs.items():
            self._function(schema, self.names[name])
        root_name = self._function(root)
        definitions = ", ".join(f"{name!r}: {function}" for name, function in self.names.items())
        self.text = "\n".join(
            [
                *self.constants,
                "",
                *self.source,
                *self.dispatch,  # the branch functions exist only now
                f"DEFINITIONS = {{{definitions}}}",
                f"ROOT = {root_name}",
                "",
            ]
        )

    def _constant(self, source: str) -> str:
        name = f"_c{len(self.constants)}"
        self.constants.append(f"{name} = {source}")
        return name

    def _function(self, schema: Any, name: str | None = None, body: list[str] | None = None) -> str:
        """Define a check function for ``schema`` (or with the statements ``body``); return its name."""
        name = name or f"_f{len(self.source)}"
        lines = body if body is not None else [f"return {self.expression(schema, 'v')}"]
        self.source.append(f"def {name}(v):\n" + "".join(f"    {line}\n" for line in lines))
        return name

    def _call(self, schema: Any) -> str:
        """The name of a function checking ``schema`` (a ``$ref`` calls its definition directly)."""
        if isinstance(schema, dict) and set(schema) - _ANNOTATIONS == {"$ref"}:
            return self._ref(schema["$ref"])
        return self._function(schema)

    def expression(self, schema: Any, v: str) -> str:
        """A Python expression, true when the value named by ``v`` matches ``schema``."""
        if schema is True:
            return "True"
        if not isinstance(schema, dict):
            raise ValueError(f"schema compiler: unsupported schema {schema!r}")
        unknown = set(schema) - _SUPPORTED
        if unknown or ("if" in schema) != ("then" in schema):
            raise ValueError(f"schema compiler: unsupported keywords {sorted(unknown) or ['if/then']}")
        checks: list[str] = []
        if "$ref" in schema:
            checks.append(f"{self._ref(schema['$ref'])}({v})")
        object_only = schema.get("type") == "object"
        if "type" in schema and not object_only:
            checks.append(self._type(schema["type"], v))
        if "const" in schema:
            checks.append(self._equal(schema["const"], v))
        if "enum" in schema:
            checks.append(self._one_of_values(schema["enum"], v))
        kind = schema.get("type")
        # Keywords for one type hold vacuously for others; once "type" allows only that one, no guard.
        only = frozenset([kind] if isinstance(kind, str) else kind or ("any",))
        checks.extend(self._string(schema, v, guard=only != {"string"}))
        if "minimum" in schema:
            low = schema["minimum"]
            guard = only - {"integer", "number"}
            checks.append(f"(not _is_number({v}) or {v} >= {low!r})" if guard else f"{v} >= {low!r}")
        checks.extend(self._array(schema, v, guard=only != {"array"}))
        if object_only or {"required", "properties", "additionalProperties"} & set(schema):
            checks.append(self._object(schema, v, strict=object_only))
        if "allOf" in schema:
            checks.append(self._all_of(schema["allOf"], v))
        if "oneOf" in schema:
            branches = " + ".join(f"({self.expression(branch, v)})" for branch in schema["oneOf"])
            checks.append(f"({branches} == 1)")
        if "if" in schema:
            condition, then = self.expression(schema["if"], v), self.expression(schema["then"], v)
            checks.append(f"(not ({condition}) or ({then}))")
        return "(" + " and ".join(checks) + ")" if checks else "True"

    def _ref(self, ref: str) -> str:
        prefix = "#/$defs/"
        if not ref.startswith(prefix) or ref[len(prefix) :] not in self.defs:
            raise ValueError(f"schema compiler: unsupported $ref {ref!r}")
        return self.names[ref[len(prefix) :]]

    def _type(self, kind: str | list[str], v: str) -> str:
        kinds = {kind} if isinstance(kind, str) else set(kind)
        if "integer" in kinds and "number" not in kinds:
            if len(kinds) > 1:
                raise ValueError("schema compiler: 'integer' is supported only alone or next to 'number'")
            return f"_is_integer({v})"
        python = tuple(t for k in sorted(kinds - {"integer"}) for t in _PYTHON_TYPES[k])
        names = ", ".join("type(None)" if kind is type(None) else kind.__name__ for kind in python)
        types = python[0].__name__ if python in ((dict,), (list,), (str,)) else self._constant(f"({names},)")
        if "boolean" in kinds or not {"number", "integer"} & kinds:
            return f"isinstance({v}, {types})"
        return f"(isinstance({v}, {types}) and not isinstance({v}, bool))"

    def _equal(self, expected: Any, v: str) -> str:
        """JSON Schema equality for a scalar: ``true`` is not ``1``, ``2.0`` is ``2``."""
        if isinstance(expected, str):
            return f"(isinstance({v}, str) and {v} == {expected!r})"
        if expected is None or isinstance(expected, bool):
            return f"({v} is {expected!r})"
        if _is_number(expected):
            return f"(_is_number({v}) and {v} == {expected!r})"
        raise ValueError(f"schema compiler: only scalar const/enum values are supported, not {expected!r}")

    def _one_of_values(self, values: list[Any], v: str) -> str:
        if all(isinstance(value, str) for value in values):
            return f"(isinstance({v}, str) and {v} in {self._constant(_frozenset(values))})"
        return "(" + " or ".join(self._equal(value, v) for value in values) + ")"

    def _string(self, schema: dict[str, Any], v: str, *, guard: bool) -> Iterator[str]:
        tests = []
        if "pattern" in schema:
            pattern = schema["pattern"]
            re.compile(pattern)  # one Python cannot compile fails here, not in the generated module
            tests.append(f"{self._constant(f'_re.compile({pattern!r}).search')}({v}) is not None")
        if "minLength" in schema:
            tests.append(f"len({v}) >= {schema['minLength']!r}")
        if "maxLength" in schema:
            tests.append(f"len({v}) <= {schema['maxLength']!r}")
        if tests:
            yield f"(not isinstance({v}, str) or ({' and '.join(tests)}))" if guard else " and ".join(tests)

    def _array(self, schema: dict[str, Any], v: str, *, guard: bool) -> Iterator[str]:
        tests = []
        if "minItems" in schema:
            tests.append(f"len({v}) >= {schema['minItems']!r}")
        if "items" in schema and schema["items"] is not True:
            tests.append(f"all(map({self._call(schema['items'])}, {v}))")
        if tests:
            yield f"(not isinstance({v}, list) or ({' and '.join(tests)}))" if guard else " and ".join(tests)

    def _object(self, schema: dict[str, Any], v: str, *, strict: bool) -> str:
        """Object keywords; ``strict`` also does ``"type": "object"`` (one test instead of two)."""
        properties: dict[str, Any] = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        if extra not in (True, False):
            raise ValueError("schema compiler: unsupported additionalProperties schema (only true or false)")
        required = schema.get("required", ())
        checks = [f"{key!r} in {v}" for key in required]
        if extra is False:
            checks.append(f"{self._constant(_frozenset(properties))}.issuperset({v})")
        for key, member in properties.items():
            if member is not True:
                item = f"{v}[{key!r}]"
                inline = isinstance(member, dict) and not {"properties", "allOf", "oneOf", "if"} & set(member)
                test = self.expression(member, item) if inline else f"{self._call(member)}({item})"
                checks.append(test if key in required else f"({key!r} not in {v} or {test})")
        body = " and ".join(checks) or "True"
        if strict:
            return f"(isinstance({v}, dict) and {body})"
        return f"(not isinstance({v}, dict) or ({body}))"

    def _all_of(self, entries: list[Any], v: str) -> str:
        tag = _dispatch_tag(entries)
        if tag is None:
            return "(" + " and ".join(self.expression(entry, v) for entry in entries) + ")"
        # Every entry is "if <tag> == const then ...": one dict lookup instead of one test per entry.
        table = {entry["if"]["properties"][tag]["const"]: self._call(entry["then"]) for entry in entries}
        branches = f"_c{len(self.constants)}_branches"
        every = f"_c{len(self.constants)}_every"
        self.constants.append(f"{branches}: dict[str, Any] = {{}}")
        check = self._function(
            None,
            body=[
                "if not isinstance(v, dict):  # an 'if' made of required/properties holds vacuously",
                f"    return all(branch(v) for branch in {every})",
                f"found = v.get({tag!r})",
                f"branch = {branches}.get(found) if isinstance(found, str) else None",
                "return branch is None or branch(v)",
            ],
        )
        self.dispatch.append(f"{branches}.update({{{', '.join(f'{k!r}: {f}' for k, f in table.items())}}})")
        self.dispatch.append(f"{every} = ({''.join(f'{f}, ' for f in table.values())})")
        return f"{check}({v})"


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


def _frozenset(values: Any) -> str:
    """Source for a frozenset of strings, sorted, so the generated text does not vary between runs."""
    return f"frozenset(({''.join(f'{value!r}, ' for value in sorted(values))}))"


_HEADER = '''"""The trace v2 schema's checks, generated from the schema by ``pytest_blackbox.trace.schema``.

Do not edit; regenerate it with ``python -m pytest_blackbox.trace.schema > {path}``.
It is used only while ``SCHEMA_SHA256`` is the schema file's (else the schema is compiled).
"""

# fmt: off
# ruff: noqa
# mypy: ignore-errors
from __future__ import annotations

import re as _re
from typing import Any

from pytest_blackbox.trace.schema import _is_integer, _is_number

SCHEMA_SHA256 = {digest!r}

'''


def _schema_digest() -> str:
    return hashlib.sha256(schema_path().read_bytes()).hexdigest()


def checks_module_text() -> str:
    """The generated module's text for the schema file as it is now."""
    path = "pytest_blackbox/trace/schema_checks.py"
    return _HEADER.format(path=path, digest=_schema_digest()) + _Compiler(_schema()).text


@lru_cache(maxsize=1)
def _compiled() -> tuple[dict[str, Check], Check]:
    """The check of each ``$defs`` entry and of the whole schema: the generated module's when it was
    generated from this schema file, else compiled now (an edited schema in a checkout; compiling
    costs a few milliseconds per process)."""
    try:
        digest = _schema_digest()
    except OSError as exc:
        raise BlackboxError(
            f"the trace v2 schema `{schema_path()}` could not be read ({exc.__class__.__name__}); "
            "reinstall pytest-blackbox"
        ) from exc
    from . import schema_checks  # it imports this module's number checks

    namespace: dict[str, Any] = vars(schema_checks)
    if namespace.get("SCHEMA_SHA256") != digest:
        namespace = {}
        exec(compile(checks_module_text(), "<trace v2 schema>", "exec"), namespace)
    return namespace["DEFINITIONS"], namespace["ROOT"]


def _is_valid_fast(document: Any) -> bool:
    return _compiled()[1](document)


# --------------------------------------------------------------------------------------------
# Explaining a failure with jsonschema, without quoting the instance.


@lru_cache(maxsize=1)
def _validators() -> tuple[Draft202012Validator, Draft202012Validator]:
    """Built on the first failure only: valid cassettes never import ``jsonschema`` (about 50 ms)."""
    from jsonschema import Draft202012Validator

    schema = _schema()
    step_schema = {"$schema": schema.get("$schema"), "$defs": schema["$defs"], "$ref": "#/$defs/step"}
    return Draft202012Validator(schema), Draft202012Validator(step_schema)


def _top_level_error(document: Any) -> ValidationError | None:
    """The most relevant error outside the steps (a steps list counts as empty here)."""
    from jsonschema.exceptions import best_match

    whole, _ = _validators()
    if isinstance(document, dict) and isinstance(document.get("steps"), list):
        document = {**document, "steps": []}
    error: ValidationError | None = best_match(whole.iter_errors(document))
    return error


def _step_error(step: Any) -> ValidationError | None:
    from jsonschema.exceptions import best_match

    _, one_step = _validators()
    error: ValidationError | None = best_match(one_step.iter_errors(step))
    return error


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


def _raise(error: ValidationError, parts: list[str | int], path: str | None) -> NoReturn:
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


def validate_top_level(doc: Any, *, path: str | None = None) -> None:
    """Raise ``CassetteSchemaError`` unless ``doc`` outside its steps matches the schema.

    The items of a ``steps`` list are not looked at: :func:`validate_step` checks each of them, so a
    reader that meets the steps one at a time can check the whole document.
    """
    if isinstance(doc, dict) and isinstance(doc.get("steps"), list):
        if _is_valid_fast({**doc, "steps": []}):
            return
    elif _is_valid_fast(doc):
        return
    error = _top_level_error(doc)
    if error is not None:  # the fast check is stricter than jsonschema here; jsonschema is the reference
        _raise(error, list(error.absolute_path), path)


def validate_step(step: Any, index: int, *, path: str | None = None) -> None:
    """Raise ``CassetteSchemaError`` unless ``step``, the step at ``index``, matches the schema."""
    if _compiled()[0]["step"](step):
        return
    error = _step_error(step)
    if error is not None:
        _raise(error, ["steps", index, *error.absolute_path], path)


def validate_schema(doc: Any, *, path: str | None = None) -> None:
    """Raise ``CassetteSchemaError`` unless ``doc`` matches the trace v2 JSON Schema.

    The top level is reported before any step, and the first bad step before the others.
    """
    if _is_valid_fast(doc):
        return
    validate_top_level(doc, path=path)
    steps = doc.get("steps") if isinstance(doc, dict) else None
    for index, step in enumerate(steps if isinstance(steps, list) else ()):
        validate_step(step, index, path=path)


if __name__ == "__main__":
    sys.stdout.write(checks_module_text())
