"""The wire contract is written in two places on the runner side (the pydantic params model and the
docstring's signature line) and used in a third (the client's dicts). Here the first two are held
equal for every method: names, which are optional, stated defaults, and enumerated values. What
the client sends is checked against the models in tests/e2e/test_wire_contract_client.py."""

import re
import typing

import pytest

from tests.support.wire_models import client_method_literals, methods

METHODS = methods()
_ITEM = re.compile(r"^(?P<name>[a-z_]+)(?P<optional>\?)?(?:=(?P<default>[^\s:]+))?(?::\s*(?P<type>.+))?$")


def _split(text: str, sep: str) -> list[str]:
    """text split at `sep` outside brackets."""
    parts, depth, current = [], 0, ""
    for ch in text:
        depth += ch in "[{(" and 1 or 0
        depth -= ch in "]})" and 1 or 0
        if ch == sep and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    return parts + [current]


def signature(name: str, doc: str) -> dict[str, dict]:
    """The params of the docstring's first line(s): `name {a, b?, c?=5, d: x|y, e? | f?} -> ...`."""
    assert doc.startswith(name + " {"), f"{name}: the docstring must open with `{name} {{params}} -> result`"
    depth = 0
    for end, ch in enumerate(doc):  # noqa: B007  (`end` is read after the loop breaks)
        depth += (ch == "{") - (ch == "}")
        if ch == "}" and depth == 0:
            break
    inner = " ".join(doc[len(name) + 2:end].split())
    found: dict[str, dict] = {}
    for part in _split(inner, ",") if inner.strip() else []:
        alternatives = [part] if ":" in part else _split(part, "|")
        for item in alternatives:
            m = _ITEM.match(item.strip())
            assert m, f"{name}: cannot read {item.strip()!r} in its signature"
            found[m["name"]] = {"optional": bool(m["optional"]), "default": m["default"], "type": m["type"]}
    return found


@pytest.mark.parametrize("name", sorted(METHODS))
def test_docstring_signature_names_the_model_fields(name):
    method = METHODS[name]
    declared = signature(name, method.doc)
    fields = method.model.model_fields
    assert set(declared) == set(fields), (
        f"{name}: docstring has {sorted(set(declared) - set(fields))} not in {method.model.__name__}, "
        f"model has {sorted(set(fields) - set(declared))} not in the docstring")
    for field, said in declared.items():
        info = fields[field]
        assert said["optional"] == (not info.is_required()), f"{name}.{field}: `?` must mean optional"
        if said["default"] is not None:
            assert str(info.default).lower() == said["default"].lower(), \
                f"{name}.{field}: docstring default {said['default']}, model default {info.default!r}"
        choices = said["type"] and re.fullmatch(r"[a-z_]+(\|[a-z_]+)+", said["type"].replace(" ", ""))
        if choices:
            literal = info.annotation
            assert typing.get_origin(literal) is typing.Literal, f"{name}.{field}: enumerated but not a Literal"
            assert set(said["type"].replace(" ", "").split("|")) == set(typing.get_args(literal))


def test_every_model_forbids_unknown_fields():
    # A typo in a client dict must be an error, never a silently ignored field.
    loose = [m.name for m in METHODS.values() if m.model.model_config.get("extra") != "forbid"]
    assert loose == []


def test_the_parser_reads_every_shape_the_docstrings_use():
    parsed = signature("x.y", "x.y {a, b?, c?=5, via: cli|hook, files: [{p, q? | r?}], d? | e?} -> {ok}")
    assert parsed == {
        "a": {"optional": False, "default": None, "type": None},
        "b": {"optional": True, "default": None, "type": None},
        "c": {"optional": True, "default": "5", "type": None},
        "via": {"optional": False, "default": None, "type": "cli|hook"},
        "files": {"optional": False, "default": None, "type": "[{p, q? | r?}]"},
        "d": {"optional": True, "default": None, "type": None},
        "e": {"optional": True, "default": None, "type": None},
    }


def test_every_method_the_client_names_exists():
    unknown = {m: where for m, where in client_method_literals().items() if m not in METHODS}
    assert unknown == {}
