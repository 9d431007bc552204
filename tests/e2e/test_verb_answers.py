"""Every verb an agent uses answers the same way (issue 18.4): bounded, the first line says
the outcome, a failure is one or two lines naming the next command to run, and --json
gives the same facts as one JSON document (a failure too). Driven through the real CLI
against a real runner, one workspace for all the verbs."""

import json
import re

import pytest

from tests.support.runner_home import free_port

pytestmark = pytest.mark.e2e

MAX_ANSWER = 4000  # bytes: none of these short verbs may print more than this
NEXT_COMMAND = re.compile(r"`?plugkit [a-z:-]+|--help")

# (words, json_too): {done} is a finished task, {port} a free TCP port, {uniq} differs
# between the plain and the --json run (a second add of one name is refused).
SUCCEEDS = [
    (["exec:bash", "echo hi"], True),
    (["exec:status", "task_{done}"], True),
    (["exec:sleep", "task_{done}", "1"], True),
    (["exec:tasks"], True),
    (["gate", "status"], True),
    (["gate", "context"], True),
    (["mutable", "add", "answer{uniq}"], True),
    (["mutable", "list"], True),
    (["prd", "add", "a thing to do"], True),
    (["prd", "list"], True),
    (["prd", "ready"], True),
    (["evidence", "add", "--task", "{done}"], True),
    (["evidence", "list"], True),
    (["evidence", "verify"], True),
    (["memory", "add", "--type", "user", "--name", "note{uniq}", "prefers", "short", "answers"], True),
    (["memory", "list"], True),
    (["memory", "search", "short"], True),
    (["kill-port", "{port}"], True),
]
FAILS = [
    ["exec:status", "task_999"],
    ["exec:sleep", "task_999"],
    ["exec:close", "task_999"],
    ["exec:type", "task_999", "x"],
    ["exec:status"],
    ["exec:status", "task_x"],
    ["exec:bash", "--bogus", "true"],
    ["exec:nosuchlang", "x"],
    ["gate", "retreat", "bogus", "why"],
    ["gate", "verify"],
    ["mutable", "resolve", "answer", "999"],
    ["mutable", "add"],
    ["prd", "update", "nosuch", "--status", "completed"],
    ["evidence", "show", "abcdef99"],
    ["evidence", "add"],
    ["memory", "show", "nope"],
    ["memory", "add"],
    ["kill-port", "notaport"],
]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """One runner and workspace for the module: the verbs only read or add."""
    from tests.support.runner_home import Home

    base = tmp_path_factory.mktemp("verbs")
    home = Home(path=base / "home", port=free_port())
    work = base / "work"
    work.mkdir()
    try:
        done = json.loads(run(home, work, ["exec:bash", "--json", "echo witness"]).stdout)["task"]["task_id"]
        yield home, work, {"done": done, "port": free_port()}
    finally:
        home.stop_all()


def run(home, work, words: list[str]):
    env = {"PLUGKIT_SESSION": "verbs"}
    return home.cli(*words, "--cwd", str(work), cwd=str(work), env=env) if _takes_cwd(words) \
        else home.cli(*words, cwd=str(work), env=env)


def _takes_cwd(words: list[str]) -> bool:
    return words[0] not in ("kill-port",) and not (words[0].startswith("exec:") and words[0] not in (
        "exec:status", "exec:sleep", "exec:close", "exec:type", "exec:tasks"))


def fill(words: list[str], values: dict) -> list[str]:
    return [w.format(**values) for w in words]


@pytest.mark.parametrize("words, json_too", SUCCEEDS, ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_a_verb_that_works_says_so_first_and_briefly(world, words, json_too):
    home, work, values = world
    done = run(home, work, fill(words, dict(values, uniq="")))
    assert done.returncode == 0, done.stderr
    answer = done.stdout or done.stderr
    assert len(done.stdout) + len(done.stderr) <= MAX_ANSWER
    first = answer.lstrip("\n").splitlines()[0]
    assert first.strip() and not first.startswith(("usage:", "Traceback", "plugkit: ")), answer
    if json_too:
        doc = run(home, work, fill(words, dict(values, uniq="-json")) + ["--json"])
        assert doc.returncode == 0, doc.stderr
        assert isinstance(json.loads(doc.stdout), dict)  # one document, nothing around it


@pytest.mark.parametrize("words", FAILS, ids=" ".join)
def test_a_failure_is_one_or_two_lines_naming_the_next_command(world, words):
    home, work, values = world
    failed = run(home, work, fill(words, values))
    assert failed.returncode != 0
    lines = failed.stderr.strip().splitlines()
    assert 1 <= len(lines) <= 2 and failed.stdout == "", failed.stderr
    assert NEXT_COMMAND.search(failed.stderr), failed.stderr
    assert "Traceback" not in failed.stderr
    as_json = run(home, work, fill(words, values) + ["--json"])
    assert as_json.returncode == failed.returncode
    error = json.loads(as_json.stdout)["error"]
    assert error["message"] and error["message"] in as_json.stderr
