"""Docker cannot run here, so the Dockerfile's essentials are checked by parsing it."""

import json
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def instructions() -> list[tuple[str, str]]:
    lines, current = [], ""
    for raw in (ROOT / "Dockerfile").read_text().splitlines():
        if raw.strip().startswith("#") or not raw.strip():
            continue
        current += raw.rstrip("\\").strip() + " "
        if not raw.rstrip().endswith("\\"):
            word, _, rest = current.strip().partition(" ")
            lines.append((word.upper(), rest.strip()))
            current = ""
    return lines


def test_dockerfile_essentials():
    ins = instructions()
    words = [w for w, _ in ins]
    assert ins[0][0] == "FROM" and ins[0][1].startswith("python:3.11")
    runs = " ".join(rest for w, rest in ins if w == "RUN")
    assert "scripts/setup" in runs  # the same install steps as the README and CI
    users = [rest for w, rest in ins if w == "USER"]
    assert users and users[-1] not in ("root", "0")
    assert words.index("USER") < words.index("CMD")
    cmd = json.loads(dict(ins)["CMD"])
    assert cmd[-2:] == ["-m", "runner"]
    health = dict(ins)["HEALTHCHECK"]
    assert "/health" in health and "CMD" in shlex.split(health.replace("[", " ").replace("]", " "))


def test_setup_script_is_what_ci_and_readme_use():
    assert "scripts/test" in (ROOT / ".ci" / "run").read_text()
    assert "scripts/setup" in (ROOT / "scripts" / "test").read_text()
    readme = (ROOT / "README.md").read_text()
    assert "scripts/test" in readme and "scripts/demo" in readme


def test_image_exposes_no_loopback_port_and_checks_the_configured_one():
    ins = instructions()
    # The runner binds 127.0.0.1 only: an EXPOSEd port would promise what a published one cannot give.
    assert "EXPOSE" not in [w for w, _ in ins]
    health = dict(ins)["HEALTHCHECK"]
    assert "PLUGKIT_PORT" in health and "32882/health" not in health
    assert "PLUGKIT_PORT" in dict(ins)["ENV"]


def test_image_has_git_through_setup():
    # plugkit work and the gates' status check run git; the slim base image has none.
    setup = (ROOT / "scripts" / "setup").read_text()
    assert "have git || need+=(git)" in setup


def test_readme_docker_exec_names_the_container():
    readme = (ROOT / "README.md").read_text()
    docker = readme[readme.index("## Docker"):]
    run = next(line for line in docker.splitlines() if "docker run" in line)
    name = run.split("--name", 1)[1].split()[0]
    assert f"docker exec -it {name} plugkit" in docker and "<container>" not in docker
