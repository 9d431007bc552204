"""Refusals by kind, wire codes once: every kind the domain raises has a row in runner/rpc/errors.py,
dispatch answers a refusal with that code, and nothing below runner/rpc speaks wire codes."""

import ast
from pathlib import Path

import pytest

from plugkit import errors, refusals
from plugkit.config import RunnerConfig
from plugkit.lifecycle import errors as gate_errors
from plugkit.protocol import NoParams
from runner.rpc import errors as rpc_errors
from runner.rpc.context import Context, Runtime
from runner.rpc.dispatch import rpc

ROOT = Path(__file__).resolve().parents[2]
BELOW_RPC = ("runner/core", "runner/executors", "runner/system")


def kinds_of(module) -> set[str]:
    return {obj.kind for obj in vars(module).values()
            if isinstance(obj, type) and issubclass(obj, refusals.Refused)}


def test_every_refusal_kind_has_exactly_one_code():
    kinds = kinds_of(refusals) | kinds_of(gate_errors)
    assert kinds <= rpc_errors.CODES.keys(), kinds - rpc_errors.CODES.keys()
    assert refusals.KINDS == kinds_of(refusals)
    assert set(rpc_errors.CODES.values()) <= set(errors.CODES), "every code is a known plugkit code"
    assert issubclass(gate_errors.GateError, refusals.Refused)  # the gates refuse the same way


@pytest.mark.parametrize("exc, code", [
    (refusals.NotFound("no task_9 in this session", {"next": "plugkit exec:tasks"}), errors.NOT_FOUND),
    (refusals.LimitReached("the runner already runs 8 tasks"), errors.LIMIT),
    (refusals.Unavailable("no such device /dev/ttyUSB9"), errors.UNAVAILABLE),
    (gate_errors.Forbidden("approvals come from a person"), errors.FORBIDDEN),
])
async def test_dispatch_answers_a_refusal_with_its_kinds_code_message_and_data(tmp_path, exc, code):
    @rpc(NoParams)
    async def refuse(ctx, p):
        """x.refuse {} -> never"""
        raise exc

    ctx = Context(runtime=Runtime(home=str(tmp_path), port=1, token="t", runner_id="r"),
                  config=RunnerConfig(home=str(tmp_path), port=1), tasks=None)  # type: ignore[arg-type]
    reply = await refuse(ctx)
    assert (reply._error.code, reply._error.message) == (code, exc.message)
    if exc.data is not None:
        assert reply._error.data == exc.data
    assert ctx.runtime.errors[code] == 1


def test_nothing_below_rpc_speaks_wire_codes():
    offenders = []
    for layer in BELOW_RPC:
        for path in sorted((ROOT / layer).rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            for node in ast.walk(tree):
                named = (isinstance(node, ast.Attribute) and node.attr == "RpcError") or \
                    (isinstance(node, ast.Name) and node.id == "RpcError") or \
                    (isinstance(node, ast.ImportFrom) and node.module == "plugkit.errors") or \
                    (isinstance(node, ast.ImportFrom) and node.module == "plugkit"
                     and any(a.name == "errors" for a in node.names))
                if named:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == [], "raise a plugkit.refusals error; runner/rpc/errors.py maps it"
