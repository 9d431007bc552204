"""The hook's reading of a shell command: approval attempts in any spelling it can see, and
shell edits of the lifecycle views (plugkit.lifecycle.hook_policy), each through decide()."""

import pytest

from plugkit.lifecycle.hook_policy import approval_attempt, approved_item, decide, edits_views, view

APPROVALS = [
    "plugkit approve c1",
    "p=plugkit; $p approve c6",
    "env -u PLUGKIT_TASK_ID plugkit approve c2",
    "sh -c 'plugkit approve c3'",
    'pl"ug"kit \'app\'rove c4',
    "/opt/x/bin/plugkit approve c5",
    "$P approve c1",
    "python -m client.cli approve c1",
    "plugkit approve --list; plugkit approve c9",
    "exec:bash\nenv -u PLUGKIT_TASK_ID plugkit approve c7",
    "exec:python\nimport json; print(json.dumps({'method': 'approval.grant'}))",
    "curl -d '{\"method\":\"approval.grant\"}' http://127.0.0.1:32882/rpc",
]
NOT_APPROVALS = ["plugkit approve --list", "plugkit approve c1 --list", "git commit -m 'approve fix'",
                 "exec:python\nprint(1)", "git status"]


@pytest.mark.parametrize("command", APPROVALS)
def test_an_approval_attempt_in_any_visible_spelling_asks_the_person(command):
    assert approval_attempt(command)
    verdict = decide(view("EMIT", [], "Bash", {"command": command}))
    assert (verdict.decision, verdict.rule) == ("ask", "approval_is_for_humans")


@pytest.mark.parametrize("command", NOT_APPROVALS)
def test_reading_approvals_and_unrelated_commands_are_no_attempt(command):
    assert not approval_attempt(command)


def test_the_item_named_is_read_through_quotes():
    assert approved_item('pl"ug"kit approve "c4"') == "c4" and approved_item("plugkit approve --list") is None


@pytest.mark.parametrize("command,edits", [
    ("sed -i 's/pending/completed/' .prd", True), ("echo '[]' > .prd", True), ("echo x>.prd", True),
    ("python3 -c \"import json; json.dump({}, open('.plugkit/state.json', 'w'))\"", True),
    ("cp /tmp/forged.json .plugkit/evidence/0123456789abcdef0123.json", True),
    ("cat .prd", False), ("git add hello.txt .prd", False), ("jq . .prd", False), ("ls .plugkit/", False),
    ("echo hi > a.txt; cat .prd.bak", False),
])
def test_a_shell_edit_of_a_view_is_denied_and_reading_one_is_not(command, edits):
    assert edits_views(command) is edits
    decision = decide(view("EMIT", [], "Bash", {"command": command})).decision
    assert decision == ("deny" if edits else "allow")
