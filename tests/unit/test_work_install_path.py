"""The runner installs a worker's hooks by running the client's installer in the worktree: a
`client/` package the worker left there (a kept branch, a worktree kept over a usage-limit wait)
must never be what runs, outside the sandbox, as the runner."""

import subprocess

from plugkit.work import workers
from runner.core.work.install import install_hooks


async def test_rejects_a_client_package_planted_in_the_worktree(tmp_path):
    wt = tmp_path / "wt"
    (wt / "client").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(wt)], check=True)
    marker = tmp_path / "ran-as-the-runner"
    (wt / "client" / "__init__.py").write_text("")
    (wt / "client" / "cli.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    await install_hooks(workers.row("claude-code"), str(wt), {})
    assert not marker.exists()
    assert (wt / ".claude" / "settings.local.json").exists()  # the real installer ran
