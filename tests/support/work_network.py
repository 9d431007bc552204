"""The network tests' probe (run by a worker) and what it says it reached, and granting a worker its
model's URL."""

from pathlib import Path

from tests.support.agent import git
from tests.support.work_cli import Work

PROBE = str(Path(__file__).resolve().parents[1] / "fixtures" / "network_probe.py")


def _net(w: Work) -> dict[str, str]:
    logs = w.cli("work", "logs", "w1").stdout
    return dict(line.split()[1:3] for line in logs.splitlines() if line.startswith("NET "))


def _grant(w: Work, repo: Path, url: str) -> None:
    """The worker holds the model's URL by the workspace's grant, as a host holds its own."""
    w.env["PLUGKIT_E2E_MODEL_BASE_URL"] = url
    config = repo / ".plugkit" / "config.toml"
    lines = [x for x in config.read_text().splitlines() if not x.startswith("work_credentials")]
    names = ", ".join(f'"{n}"' for n in sorted(w.env))
    config.write_text("\n".join(lines) + f"\nwork_credentials = [{names}]\n")
    git(repo, "commit", "-qam", "grant the model's URL")
