"""The destructive-command policy of a `plugkit work` worker, one module per role:

rows   the rows (one kind of harm each) and judge()/judge_code(), the entry points
shell  a shell command line read as the simple commands it would run (SHELLS: the one list of shells)
lift   the pre-pass that takes out what shlex cannot see (substitutions, comments, here-docs)
checks the row checks: each reads one simple command
refs   the ref row: a worker moves no ref but its own branch
paths  where a word points: inside the worktree, outside, or unknown
"""

from plugkit.work.policy.rows import ROWS, Denial, judge, judge_code, judge_shell

__all__ = ["ROWS", "Denial", "judge", "judge_code", "judge_shell"]
