"""Containers and volumes a worker started are torn down (issue 48 #3, work_docker), through a real
container engine (tests/support/engine.py: the one DOCKER_HOST names, else a private dockerd),
the real runner, real git, real bwrap and the scripted command worker.

The worker reaches the engine only through its attempt's labelling proxy (DOCKER_HOST in its
sandbox): it starts a container and a volume and leaves them; its `--privileged` and `-v /:/host`
are refused with a line it can read; a container not labelled as its own (a stranger's, made on
the engine directly) cannot be removed, stopped or exec'd into by it. Once its attempt ends, its
container and volume are gone, the stranger's still runs, and `work status` says what went.
"""

import json
import os
import shutil
import signal
import time

import pytest

from tests.support import engine as engine_mod
from tests.support.agent import git, make_repo
from tests.support.work_cli import Work, commit_file
from tests.support.escapees import unique_seconds
from tests.support.procs import wait_gone
from tests.support.runner_home import cli_argv

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(engine_mod.why_not() is not None, reason=engine_mod.why_not() or "")]
IMAGE = engine_mod.IMAGE


@pytest.fixture(scope="module")
def engine():
    with engine_mod.engine() as sock:
        yield sock


def tries(stranger: str, outside: str) -> str:
    """The worker's script: its own container and volume (left running), then what it must not do;
    each answer into a file the test reads while the worker waits for its go. `outside`: a dir
    beyond its worktree, which a directory of its worktree swapped for a link between the
    container's create and its start would hand the engine's mount."""
    refused = [("privileged", f"docker run --privileged {IMAGE} true"),
               ("root", f"docker run -v /:/host {IMAGE} ls /host"),
               ("rm", f"docker rm -f {stranger}"),
               ("stop", f"docker stop -t 0 {stranger}"),
               ("exec", f"docker exec {stranger} true"),
               ("image", f"docker tag {IMAGE} {IMAGE}")]  # the shared image's name: the person's to keep
    return ("set -u; docker volume create wvol >/dev/null && "
            f"docker run -d --name wbox -v wvol:/data {IMAGE} sh -c 'echo kept > /data/f; sleep 600' >/dev/null "
            "&& docker ps --format '{{.Names}}' > ps.out; echo $DOCKER_HOST > host.out; "
            # attached run and exec: the engine's hijacked streams, both ways through the proxy
            f"echo in | docker run --rm -i {IMAGE} cat > attached.out 2>attached.err; docker exec wbox cat /data/f >> attached.out; "
            + "".join(f"{cmd} > {name}.out 2>&1; echo $? >> {name}.out; " for name, cmd in refused)
            + f"mkdir d; docker create --name swap -v $PWD/d:/x {IMAGE} cat /x/canary > swap.out 2>&1; "
            f"rmdir d; ln -s {outside} d; docker start -a swap >> swap.out 2>&1; echo $? >> swap.out; rm d; "
            + "touch report.done; until [ -f go ]; do sleep 0.05; done")


def test_a_workers_container_and_volume_go_with_its_attempt_and_it_cannot_reach_the_host(home, tmp_path, engine):
    # work_setup runs in the worker's sandbox with the same proxy: what it makes goes with the attempt too.
    repo = make_repo(tmp_path / "repo", 'gates = "advisory"\nwork_docker = true\n'
                                        'work_setup = "docker volume create wsetup >/dev/null"\n')
    (repo / ".gitignore").write_text("*.out\n*.err\nreport.done\ngo\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-qm", "ignore what the worker reports")
    stranger = f"stranger-{unique_seconds()}"
    engine_mod.docker(engine, "run", "-d", "--name", stranger, IMAGE, "sleep", "600")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "canary").write_text("CANARY-outside-the-worktree\n")
    try:
        w = Work(home, repo, {"w1": [["shell", tries(stranger, str(outside))], *commit_file("w1.txt")]})
        w.env["DOCKER_HOST"] = f"unix://{engine}"  # who runs `plugkit work` names the engine
        w.add("w1", "--verify", "test -f w1.txt")
        w.start()
        tree = repo / ".plugkit" / "worktrees" / "w1"
        w.until(lambda r: (tree / "report.done").exists() or r["ended_at"] is not None)
        out = {f: (tree / f"{f}.out").read_text() for f in ("ps", "host", "privileged", "root", "rm", "stop", "exec",
                                                                "image", "attached", "swap")}
        # A bind of a directory it can swap for a link: refused at create, before the engine's mount.
        assert "CANARY" not in out["swap"] and "only the worktree itself may be bound" in out["swap"], out["swap"]
        # Its own: made through its proxy, labelled with its attempt, running.
        assert out["ps"].split() == ["wbox"], out  # `docker ps` lists its own only, not the stranger's
        assert out["host"].startswith("unix://") and engine not in out["host"], out
        assert out["attached"].split() == ["in", "kept"], out
        box = engine_mod.inspect(engine, "container", "wbox")
        assert box is not None and box["State"]["Running"], box
        assert box["Config"]["Labels"]["plugkit.item"] == "w1", box["Config"]["Labels"]
        assert (engine_mod.inspect(engine, "volume", "wvol") or {}).get("Labels", {}).get("plugkit.item") == "w1"
        # What would hand it the host, or a stranger's container: refused, in a line it reads.
        assert "plugkit: --privileged is refused" in out["privileged"], out
        assert "plugkit: bind mount of / is refused" in out["root"], out
        for verb in ("rm", "stop", "exec"):
            assert f"plugkit: container '{stranger}' is not one this worker created" in out[verb], out
            assert out[verb].split()[-1] != "0", out
        assert f"{IMAGE} is refused: an image of that name exists" in out["image"], out
        (tree / "go").write_text("")
        run = w.until(lambda r: r["ended_at"] is not None)
        item = w.items(run)["w1"]
        assert item["state"] == "completed", run
        # Its attempt ended: its container and volume are gone, the stranger's runs on.
        assert engine_mod.inspect(engine, "container", "wbox") is None
        assert engine_mod.inspect(engine, "volume", "wvol") is None
        assert (engine_mod.inspect(engine, "container", stranger) or {}).get("State", {}).get("Running"), stranger
        assert engine_mod.inspect(engine, "volume", "wsetup") is None
        assert "removed container wbox" in item["teardown"] and "volume wvol" in item["teardown"], item
        assert "volume wsetup" in item["teardown"], item
        assert item["teardown"][:200] in w.cli("work", "status", ok=False).stdout
    finally:
        engine_mod.docker(engine, "rm", "-f", stranger, "wbox", "swap", ok=False)
        engine_mod.docker(engine, "volume", "rm", "-f", "wvol", ok=False)


def test_a_runner_that_died_mid_attempt_leaves_the_workers_containers_to_the_next_ones_boot(home, tmp_path, engine):
    repo = make_repo(tmp_path / "repo", 'gates = "advisory"\nwork_docker = true\nwork_resume = false\n')
    (repo / ".gitignore").write_text("report.done\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-qm", "ignore what the worker reports")
    stranger = f"stranger-{unique_seconds()}"  # not a worker's: the sweep leaves it
    engine_mod.docker(engine, "run", "-d", "--name", stranger, IMAGE, "sleep", "600")
    try:
        w = Work(home, repo, {"w1": [["shell", f"docker run -d --name orphan {IMAGE} sleep 600 >/dev/null && "
                                               f"printf 'FROM {IMAGE}\\nLABEL o=1\\n' | DOCKER_BUILDKIT=0 docker build "
                                               "-q -t plugkit-w1-orphan:1 - >/dev/null && touch report.done; sleep 600"]]})
        w.env["DOCKER_HOST"] = f"unix://{engine}"
        w.add("w1", "--verify", "true")
        w.start()
        tree = repo / ".plugkit" / "worktrees" / "w1"
        w.until(lambda r: (tree / "report.done").exists() or r["ended_at"] is not None)
        assert engine_mod.inspect(engine, "container", "orphan") is not None
        assert engine_mod.inspect(engine, "image", "plugkit-w1-orphan:1") is not None
        pid = home.discovery()["pid"]
        os.kill(pid, signal.SIGKILL)  # no attempt gets its end: the container outlives the runner
        assert wait_gone(pid)
        assert engine_mod.inspect(engine, "container", "orphan") is not None
        home.cli("runner", "start")
        deadline = time.monotonic() + 60
        while engine_mod.inspect(engine, "container", "orphan") or engine_mod.inspect(engine, "image", "plugkit-w1-orphan:1"):
            assert time.monotonic() < deadline, "the next runner's boot did not remove the dead attempt's container"
            time.sleep(0.1)
        assert (engine_mod.inspect(engine, "container", stranger) or {}).get("State", {}).get("Running"), stranger
        w.until(lambda r: r["ended_at"] is not None)
    finally:
        engine_mod.docker(engine, "rm", "-f", stranger, "orphan", ok=False)
        engine_mod.docker(engine, "rmi", "plugkit-w1-orphan:1", ok=False)


def test_a_workers_exec_tasks_reach_its_proxy_and_a_persons_do_not(home, tmp_path, engine):
    """`plugkit exec:bash 'docker ...'` typed by the worker (what its hooks tell it to do) runs in
    a session of its own: it gets the attempt's proxy through the worker's capability, its
    container is labelled and torn down with the attempt; a person's task naming the worker's
    session, sandboxed in its worktree, gets none."""
    repo = make_repo(tmp_path / "repo", 'gates = "advisory"\nwork_docker = true\n')
    (repo / ".gitignore").write_text("*.out\nreport.done\ngo\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-qm", "ignore what the worker reports")
    task = ("echo task-host=$DOCKER_HOST; docker run -d --name xbox " + IMAGE + " sleep 600 >/dev/null && "
            "docker ps --format {{.Names}}")
    w = Work(home, repo, {"w1": [["shell", f"echo $DOCKER_HOST > host.out; {' '.join(cli_argv())} exec:bash "
                                           f"'{task}' > exec.out 2>&1; touch report.done; "
                                           "until [ -f go ]; do sleep 0.05; done"], *commit_file("w1.txt")]})
    w.env["DOCKER_HOST"] = f"unix://{engine}"
    w.add("w1", "--verify", "test -f w1.txt")
    run_id = w.start()["id"]
    tree = repo / ".plugkit" / "worktrees" / "w1"
    try:
        w.until(lambda r: (tree / "report.done").exists() or r["ended_at"] is not None)
        proxy = (tree / "host.out").read_text().strip()
        said = (tree / "exec.out").read_text()
        assert proxy.startswith("unix://") and f"task-host={proxy}\n" in said, (proxy, said)
        assert "\nxbox\n" in said, said  # its task's `docker ps`: the attempt's own container
        labels = (engine_mod.inspect(engine, "container", "xbox") or {}).get("Config", {}).get("Labels", {})
        assert labels.get("plugkit.item") == "w1" and labels.get("plugkit.run") == run_id, labels
        # A person's task, sandboxed in the worktree under the worker's own session id: no proxy.
        person = home.cli("exec:bash", "--sandbox", "--session", labels["plugkit.attempt"],
                          "echo person-host=${DOCKER_HOST:-none}", cwd=str(tree), env={"DOCKER_HOST": ""})
        assert "person-host=none" in person.stdout, (person.stdout, person.stderr)
        (tree / "go").write_text("")
        run = w.until(lambda r: r["ended_at"] is not None)
        item = w.items(run)["w1"]
        assert item["state"] == "completed", run
        assert engine_mod.inspect(engine, "container", "xbox") is None
        assert "container xbox" in item["teardown"], item
    finally:
        engine_mod.docker(engine, "rm", "-f", "xbox", ok=False)


COMPOSE = f"""version: "3.8"
services:
  web:
    image: {IMAGE}
    command: sh -c "cat /w/src/hello > /data/f; sleep 600"
    volumes: ["data:/data", ".:/w:ro"]
    networks: [back]
  db:
    image: {IMAGE}
    command: sleep 600
    volumes: ["data:/var/db"]
    networks: [back]
volumes:
  data:
networks:
  back:
"""
# A service asking for the host, one per file: (name, the service's extra lines, the proxy's line)
HOSTILE = (("priv", "privileged: true", "plugkit: --privileged is refused"),
           ("sub", 'volumes: ["./src:/src"]', "plugkit: bind mount of"),  # a path it could swap for a link
           ("hostnet", "network_mode: host", "plugkit: --network=host is refused"),
           ("root", 'volumes: ["/:/host"]', "plugkit: bind mount of / is refused"))


@pytest.mark.skipif(shutil.which("docker-compose") is None,
                    reason="no docker-compose (apt-get install docker-compose, or scripts/setup)")
def test_a_workers_compose_project_is_labelled_and_goes_and_a_hostile_one_is_refused(home, tmp_path, engine):
    repo = make_repo(tmp_path / "repo", 'gates = "advisory"\nwork_docker = true\n')
    (repo / ".gitignore").write_text("*.out\nreport.done\ngo\n")
    (repo / "docker-compose.yml").write_text(COMPOSE)
    (repo / "src").mkdir()
    (repo / "src" / "hello").write_text("from the worktree\n")
    for name, extra, _line in HOSTILE:
        (repo / f"{name}.yml").write_text(f'version: "3.8"\nservices:\n  evil:\n    image: {IMAGE}\n'
                                          f"    command: sleep 600\n    {extra}\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "a compose project, and three that ask for the host")
    hostile = "".join(f"docker-compose -f {n}.yml -p {n} up -d > {n}.out 2>&1; echo $? >> {n}.out; "
                      for n, _e, _l in HOSTILE)
    w = Work(home, repo, {"w1": [["shell", "docker-compose up -d > up.out 2>&1 && docker-compose exec -T web "
                                           "cat /data/f > data.out 2>&1; " + hostile +
                                           "touch report.done; until [ -f go ]; do sleep 0.05; done"],
                                 *commit_file("w1.txt")]})
    w.env["DOCKER_HOST"] = f"unix://{engine}"
    w.add("w1", "--verify", "test -f w1.txt")
    w.start()
    tree = repo / ".plugkit" / "worktrees" / "w1"
    made = (("container", "plugkit-w1_web_1"), ("container", "plugkit-w1_db_1"), ("network", "plugkit-w1_back"), ("volume", "plugkit-w1_data"))
    try:
        w.until(lambda r: (tree / "report.done").exists() or r["ended_at"] is not None)
        assert (tree / "data.out").read_text() == "from the worktree\n", (tree / "up.out").read_text()
        for kind, name in made:  # what compose made, through the proxy: the attempt's labels on each
            found = engine_mod.inspect(engine, kind, name) or {}
            labels = found.get("Config", found).get("Labels") or {}
            assert labels.get("plugkit.item") == "w1", (kind, name, found)
        for name, _extra, line in HOSTILE:
            said = (tree / f"{name}.out").read_text()
            assert line in said and said.split()[-1] != "0", said
            assert engine_mod.inspect(engine, "container", f"{name}_evil_1") is None
        (tree / "go").write_text("")
        run = w.until(lambda r: r["ended_at"] is not None)
        item = w.items(run)["w1"]
        assert item["state"] == "completed", run
        for kind, name in made:
            assert engine_mod.inspect(engine, kind, name) is None, (kind, name)
            assert f"{kind} {name}" in item["teardown"], item
    finally:
        engine_mod.docker(engine, "rm", "-f", "plugkit-w1_web_1", "plugkit-w1_db_1", ok=False)
        engine_mod.docker(engine, "network", "rm", "plugkit-w1_back", ok=False)
        engine_mod.docker(engine, "volume", "rm", "-f", "plugkit-w1_data", ok=False)


def test_the_images_a_worker_built_go_with_its_attempt_unless_anothers_container_uses_one(home, tmp_path, engine):
    repo = make_repo(tmp_path / "repo", 'gates = "advisory"\nwork_docker = true\n')
    (repo / ".gitignore").write_text("*.out\n*.err\nreport.done\ngo\n")
    (repo / "ctx").mkdir()
    for name in ("wgone", "wkept"):  # apart: one Dockerfile would make the second name a cache hit of the first
        # A LABEL step, not RUN: an image of its own without a container run per build (vfs copies each).
        (repo / "ctx" / f"{name}.Dockerfile").write_text(f"FROM {IMAGE}\nLABEL made={name}\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "an image to build")
    # wgone built twice: the first image's name is taken by the second.
    builds = "export DOCKER_BUILDKIT=0; " + "".join(
        f"docker build -q {flags} -f ctx/{name}.Dockerfile -t plugkit-w1-{name}:1 ctx >> {name}.out 2>>build.err; "
        for name, flags in (("wgone", ""), ("wgone", "--label v=2"), ("wkept", ""))) + (
        # A name the person has not pulled yet: what their next `docker run redis:7` would start.
        "docker build -q -f ctx/wkept.Dockerfile -t redis:7 ctx > shadow.out 2>&1; echo $? >> shadow.out; ")
    w = Work(home, repo, {"w1": [["shell", builds + "touch report.done; until [ -f go ]; do sleep 0.05; done"],
                                 *commit_file("w1.txt")]})
    w.env["DOCKER_HOST"] = f"unix://{engine}"
    w.add("w1", "--verify", "test -f w1.txt")
    w.start()
    tree = repo / ".plugkit" / "worktrees" / "w1"
    stranger = f"stranger-{unique_seconds()}"
    try:
        w.until(lambda r: (tree / "report.done").exists() or r["ended_at"] is not None)
        built = {name: (tree / f"{name}.out").read_text().split() for name in ("wgone", "wkept")}
        for ids in built.values():  # built through its proxy: labelled as built by its attempt
            assert ids, ((tree / "build.err").read_text(), built)
            for image in ids:
                labels = (engine_mod.inspect(engine, "image", image) or {}).get("Config", {}).get("Labels") or {}
                assert json.loads(labels.get("plugkit.built", "{}")).get("plugkit.attempt", "").endswith("-w1-1"), labels
                assert labels.get("plugkit.attempt") == "", labels  # what a container of it inherits: no owner
        shadow = (tree / "shadow.out").read_text()
        assert "begin with its project's, plugkit-w1" in shadow and shadow.split()[-1] != "0", shadow
        assert engine_mod.inspect(engine, "image", "redis:7") is None
        # Someone else's container runs the worker's image: the image stays for it.
        engine_mod.docker(engine, "run", "-d", "--name", stranger, "plugkit-w1-wkept:1", "sleep", "600")
        (tree / "go").write_text("")
        run = w.until(lambda r: r["ended_at"] is not None)
        item = w.items(run)["w1"]
        assert item["state"] == "completed", run
        # wgone's first build too, untagged by the second
        assert [i for i in built["wgone"] if engine_mod.inspect(engine, "image", i) is not None] == [], item["teardown"]
        assert "image plugkit-w1-wgone:1" in item["teardown"], item
        assert len(built["wgone"]) == 2 and engine_mod.inspect(engine, "image", "plugkit-w1-wkept:1") is not None, item["teardown"]
        assert engine_mod.inspect(engine, "image", IMAGE) is not None  # the image it built on: not its own
        assert (engine_mod.inspect(engine, "container", stranger) or {}).get("State", {}).get("Running"), stranger
    finally:
        engine_mod.docker(engine, "rm", "-f", stranger, ok=False)
        engine_mod.docker(engine, "rmi", "plugkit-w1-wgone:1", "plugkit-w1-wkept:1", "redis:7", ok=False)


def test_work_docker_is_refused_to_a_worker_outside_the_sandbox(home, tmp_path, engine):
    # Unsandboxed, it can write its worktree's parent: the one bind the proxy allows could be swapped.
    repo = make_repo(tmp_path / "repo", 'gates = "advisory"\nwork_docker = true\n')
    w = Work(home, repo, {"w1": [["shell", "docker ps > ps.out 2>&1"], *commit_file("w1.txt")]})
    w.env["DOCKER_HOST"] = f"unix://{engine}"
    w.add("w1", "--verify", "test -f w1.txt")
    w.start("--no-sandbox")
    item = w.items(w.settled())["w1"]
    assert item["state"] != "completed" and "work_docker needs the worker sandbox" in json.dumps(item), item
