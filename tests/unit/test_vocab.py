"""The shared vocabulary is declared once: task states, end reasons and tag names come from
plugkit.vocab everywhere, and no module spells them again."""

import ast
import pathlib
import typing

import pytest

from plugkit import vocab
from plugkit.protocol import TaskInfo
from runner.core.tasks.task import SessionKey, Task
from runner.core.tasks.output import OutputBuffer
from runner.rpc import shapes
from runner.system import ledger, tags

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ("plugkit", "runner", "client")


def _sources():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.name != "vocab.py":
                yield path, ast.parse(path.read_text(), str(path))


def _string_constants(tree: ast.AST) -> list[tuple[int, str]]:
    return [(n.lineno, n.value) for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def test_the_wire_model_accepts_exactly_the_vocabulary_states():
    field = TaskInfo.model_fields["state"].annotation
    assert typing.get_args(field) == vocab.TASK_STATES
    assert vocab.TERMINAL_STATES | set(vocab.LIVE_STATES) == set(vocab.TASK_STATES)


def test_no_rejected_state_exists_because_nothing_produces_it():
    # A refused exec is an RPC error, never a task; a state nobody produces only misleads readers.
    assert "rejected" not in vocab.TASK_STATES
    for path, tree in _sources():
        assert "rejected" not in {v for _n, v in _string_constants(tree)}, path


def test_terminal_state_sets_are_imported_not_redeclared():
    # A set literal of two or more state words is a second declaration of the state machine.
    states = set(vocab.TASK_STATES)
    copies = []
    for path, tree in _sources():
        for node in ast.walk(tree):
            if isinstance(node, (ast.Set, ast.Tuple, ast.List)):
                words = {e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in states}
                if len(words) >= 3 or words == set(vocab.LIVE_STATES):
                    copies.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert copies == []


def test_tag_names_are_spelled_only_in_the_vocabulary():
    spelled = []
    for path, tree in _sources():
        for lineno, value in _string_constants(tree):
            if value in vocab.TAG_NAMES - {vocab.HOME_TAG}:  # PLUGKIT_HOME is also plain config
                spelled.append(f"{path.relative_to(ROOT)}:{lineno} {value}")
    assert spelled == []
    assert tags.TAG_NAMES is vocab.TAG_NAMES and tags.IDENTITY_NAMES is vocab.IDENTITY_TAGS


def test_the_ledger_writes_the_runner_lost_sentence_of_the_table():
    assert (ledger.LOST_STATE, ledger.LOST_REASON) == (vocab.KILLED, "runner_lost")
    assert ledger.LOST_MESSAGE == vocab.END_REASONS["runner_lost"]
    assert ledger.LIVE == vocab.LIVE_STATES


@pytest.mark.parametrize("reason", sorted(vocab.END_REASONS))
def test_a_finished_task_says_its_reason_in_the_table_words(reason):
    task = Task(id=7, session=SessionKey("s", "/w"), lang="bash", buffer=OutputBuffer(1024))
    assert task.finish(vocab.FAILED, reason)
    assert task.message == f"task_7 {vocab.END_REASONS[reason]}"
    assert task.finished and shapes.task_info(task).state == vocab.FAILED


def test_vocab_imports_nothing():
    tree = ast.parse((ROOT / "plugkit" / "vocab.py").read_text())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert imported == set()  # not even typing: the client's hot path imports vocab


def test_the_ledger_path_is_built_by_its_helper_only():
    from plugkit import paths

    assert paths.ledger_file("/h") == "/h/ledger.sqlite3"
    name = "ledger.sqlite3"
    spelled = [f"{path.relative_to(ROOT)}:{n}" for path, tree in _sources()
               for n, value in _string_constants(tree) if name in value and path.name != "paths.py"]
    assert spelled == []
