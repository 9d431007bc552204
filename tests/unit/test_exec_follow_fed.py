"""exec's follow while a pipe feeds the task (client/verbs/exec.py _follow_fed): a "waiting for input"
answer made while the pipe's last line and its end were being delivered is stale, never the answer
(the CLI said a task whose stdin it had just closed was waiting for input, exit 0, its last output
unread). Pure logic: a scripted follower and a real Feed whose delivery happens inside a follow."""

from client.verbs import exec_stdin
from client.verbs.exec import _follow_fed

WAITING = {"state": "running", "waiting_for_input": True}
DONE = {"state": "completed", "exit_code": 0}


class Follower:
    def __init__(self, answers, during=None) -> None:
        self.answers, self.during, self.calls = list(answers), during, 0

    def follow(self, info, deadline):
        self.calls += 1
        if self.during is not None and self.calls == 1:
            self.during()  # the pump delivers while the runner makes this answer
        return self.answers.pop(0)


def _feed() -> exec_stdin.Feed:
    return exec_stdin.Feed(exec_stdin.STREAM)


def test_a_waiting_answer_made_while_the_end_of_input_landed_is_followed_again():
    feed = _feed()
    follower = Follower([WAITING, DONE], during=lambda: feed._bump(live=False))  # the EOF, mid-answer
    assert _follow_fed(follower, None, 1e18, feed) == DONE and follower.calls == 2


def test_a_task_waiting_after_its_input_ended_before_the_answer_is_waiting():
    feed = _feed()
    feed._bump(live=False)  # everything delivered, its end too, before the follow began
    follower = Follower([WAITING])
    assert _follow_fed(follower, None, 1e18, feed) == WAITING and follower.calls == 1
