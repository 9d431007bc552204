"""Mutables: values come from witnessed output only, and the two-attempt rule."""

import pytest

from plugkit.lifecycle import errors, mutables
from plugkit.lifecycle.mutables import Mutable, Witness

OUT = "Python 3.11.2\nport=5432\nready\n"


def w(output=OUT, state="completed", exit_code=0, truncated=False, task_id=3):
    return Witness(task_id, state, exit_code, output, truncated)


@pytest.mark.parametrize("line,regex,value", [
    (None, None, OUT.strip()), (2, None, "port=5432"), (-1, None, "ready"),
    (None, r"port=(\d+)", "5432"), (None, r"^ready$", "ready"), (None, r"Python (?P<v>[\d.]+)", "3.11.2"),
])
def test_value_is_read_from_the_named_place(line, regex, value):
    attempt = mutables.judge(Mutable(name="m"), w(), line, regex)
    assert attempt == mutables.Attempt(value, True, "")


@pytest.mark.parametrize("witness,line,regex,reason", [
    (w(state="failed", exit_code=2), None, None, "task_3 ended failed with exit code 2"),
    (w(state="killed", exit_code=None), None, None, "task_3 ended killed"),
    (w(), 9, None, "task_3's output has no line 9"),
    (w(), None, r"user=(\w+)", "task_3's output has no match for"),
])
def test_failed_attempts_say_why(witness, line, regex, reason):
    attempt = mutables.judge(Mutable(name="m"), witness, line, regex)
    assert not attempt.ok and attempt.reason.startswith(reason)


def test_a_value_other_than_expected_is_a_failed_attempt():
    attempt = mutables.judge(Mutable(name="m", expected="5433"), w(), None, r"port=(\d+)")
    assert (attempt.ok, attempt.value) == (False, "5432") and "differs from expected '5433'" in attempt.reason


@pytest.mark.parametrize("m,witness,line,regex,error,match", [
    (Mutable(name="m"), w(), 1, "x", errors.Invalid, "not both"),
    (Mutable(name="m"), w(), 0, None, errors.Invalid, "count from 1"),
    (Mutable(name="m"), w(), None, "(", errors.Invalid, r"regex: missing \)"),
    (Mutable(name="m"), w(), None, r"(a)\1", errors.Invalid, r"invalid escape sequence: \\1 \(RE2 runs in linear time"),
    (Mutable(name="m", status="KNOWN", value="1"), w(), None, None, errors.Conflict, "already KNOWN"),
    (Mutable(name="m"), w(truncated=True), 2, None, errors.Conflict, "truncated"),
    (Mutable(name="m"), w(output="x" * 5000), None, None, errors.Conflict, "at most 4096"),
])
def test_malformed_requests_are_refused_without_counting(m, witness, line, regex, error, match):
    with pytest.raises(error, match=match):
        mutables.judge(m, witness, line, regex)
    assert m.attempts == 0


def test_truncated_output_can_still_be_searched_with_a_regex():
    assert mutables.judge(Mutable(name="m"), w(truncated=True), None, r"port=(\d+)").value == "5432"


def test_two_attempt_rule():
    m = Mutable(name="m", expected="yes")
    bad = mutables.Attempt("no", False, "value 'no' differs")
    first = mutables.apply(m, bad, "r1")
    assert (first.failed, first.attempts, first.retreat, m.status) == (True, 1, False, "UNKNOWN")
    assert m.last_failure == "value 'no' differs (receipt r1)"
    second = mutables.apply(m, bad, "r2")
    assert (second.attempts, second.retreat) == (2, True)
    assert m.attempts == 0  # a fresh budget after replanning
    good = mutables.apply(m, mutables.Attempt("yes", True, ""), "r3")
    assert good.known and (m.status, m.value, m.resolved_by, m.last_failure) == ("KNOWN", "yes", "r3", None)


def test_names_are_checked_and_unique():
    existing = {"a": Mutable(name="a")}
    with pytest.raises(errors.Conflict, match="already exists"):
        mutables.new("a", None, "", existing)
    for bad in ("1abc", "has space", "x" * 65, ""):
        with pytest.raises(errors.Invalid):
            mutables.new(bad, None, "", existing)
    assert mutables.new("db.port:v2", "5432", "the port", existing).expected == "5432"


def test_a_catastrophic_regex_runs_in_linear_time():
    # Under Python's backtracking `re` this search would not end within the test's timeout
    # (2^N paths for N a's); RE2 answers at once.
    witness = w(output="a" * 200_000 + "!")
    attempt = mutables.judge(Mutable(name="m"), witness, None, r"^(a+)+$")
    assert not attempt.ok and "no match" in attempt.reason
