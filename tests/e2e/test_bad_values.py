"""Bad values never reach the OS (issue 17.7): every method, read from its params model.

The methods and their fields come from the runner's own tables (rpc NAMESPACES -> each
module's METHODS -> the model its @rpc decorator validates with), so a method added later
is attacked too, and one that types its cwd as a plain `str` fails here.
"""

import importlib
import json
import types
import typing

import pytest

from client.wire.rpc import Client, Connection, RpcFailure
from runner.rpc.namespaces import NAMESPACES
from tests.support.runner_home import Home

pytestmark = pytest.mark.e2e

# field name -> the bad values it must refuse, each with words its problem must contain.
ATTACKS = {
    "cwd": [("/tmp/a\x00b", "NUL"), (".", "absolute"), ("sub/dir", "absolute")],
    "task_id": [(1 << 63, "less than or equal"), (1 << 80, "less than or equal")],
    "env": [({"A=B": "x"}, "'='"), ({"A\x00B": "x"}, "NUL"), ({"": "x"}, "non-empty"),
            ({"A": "x\x00y"}, "NUL")],
    "cursor": [(1 << 63, "less than or equal")],
    "path": [("/tmp/a\x00b", "NUL")],
}


# Fields that take an absolute directory: a plausible one is the test's own.
PATHS = frozenset({"cwd", "worktree"})
# Fields whose plausible value no annotation spells (a pattern): by name.
SHAPED = {"base": "0" * 40, "argv": ["true"]}  # work.run: a commit's hash, a command line


def every_method() -> dict[str, type]:
    found = {}
    for module in NAMESPACES.values():
        for name, fn in importlib.import_module(module).METHODS.items():
            found[name] = fn.params_model
    return found


def _plausible(annotation, name: str, cwd: str):
    """A value the field accepts, so the attacked field is the only thing wrong."""
    if name in PATHS:
        return cwd
    if name in SHAPED:
        return SHAPED[name]
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _plausible(args[0], name, cwd)
    if origin in (typing.Union, types.UnionType):
        return _plausible(next(a for a in args if a is not type(None)), name, cwd)
    if origin is typing.Literal:
        return args[0]
    if origin in (list, tuple):
        return []
    if origin is dict or annotation is dict:
        return {}
    return {str: "abcdef", int: 1, bool: False, float: 1.0}.get(annotation, "abcdef")


def baseline(model, cwd: str) -> dict:
    params = {}
    for name, field in model.model_fields.items():
        if field.is_required() or name in PATHS:
            params[name] = _plausible(field.annotation, name, cwd)
    return params


def test_bad_values_are_refused_naming_the_field_by_every_method(home: Home, tmp_path):
    methods = every_method()
    assert len(methods) > 40
    runner = home.start_runner()
    attacked, wrong = set(), []
    client = Client(Connection(home.port, timeout=30), token=home.token())
    try:
        for method, model in sorted(methods.items()):
            base = baseline(model, str(tmp_path))
            for field, cases in ATTACKS.items():
                if field not in model.model_fields:
                    continue
                attacked.add(field)
                for value, words in cases:
                    try:
                        client.call(method, {**base, field: value}, timeout=30)
                    except RpcFailure as exc:
                        if exc.code == -32602 and exc.message.startswith(f"Invalid params: {field}") \
                                and words in exc.message:
                            continue
                        wrong.append(f"{method} {field}={value!r}: {exc.code} {exc.message}")
                    else:
                        wrong.append(f"{method} {field}={value!r}: accepted")
        health = client.call("runner.info", {}, timeout=30)
        assert health["pid"] == runner.pid
    finally:
        client.close()
        runner.terminate()
        runner.communicate(timeout=10)
    assert not wrong, "\n".join(wrong)
    assert attacked == set(ATTACKS)



def test_a_malformed_port_variable_names_itself_and_exits_2(home):
    done = home.cli("exec:bash", "true", env={"PLUGKIT_PORT": "notaport"})
    assert done.returncode == 2, done.stderr
    assert "PLUGKIT_PORT='notaport' is not a TCP port" in done.stderr and "invalid literal" not in done.stderr
    assert home.runner_pids() == []


def test_json_errors_carry_the_real_error_code(home):
    missing = home.cli("exec:status", "task_77", "--json")
    assert missing.returncode == 1 and json.loads(missing.stdout)["error"]["code"] == -32001  # not found
    usage = home.cli("exec:status", "task_abc", "--json")
    assert usage.returncode == 2 and json.loads(usage.stdout)["error"]["code"] == "usage"
