"""The labelling proxy's rules (runner/system/docker_policy.py), with a hand-written engine of
objects and their labels: what hands a worker the host is refused in one line, an object not
labelled as the attempt's own is not acted on, and everything it creates is labelled."""

import json
import os

import pytest

from runner.system.docker_policy import Policy
from runner.system.docker_request import ATTEMPT, Found, Owner, Refused, Request


class FakeEngine:
    def __init__(self, owner: Owner) -> None:
        mine, stranger = owner.labels(), {ATTEMPT: "someone-else"}
        self.objects = {("container", "mine"): Found("c" * 64, mine), ("container", "theirs"): Found("d" * 64, stranger),
                        ("container", "bare"): Found("e" * 64, {}), ("volume", "myvol"): Found("myvol", mine),
                        ("volume", "theirvol"): Found("theirvol", stranger), ("network", "mynet"): Found("n1", mine),
                        ("network", "theirnet"): Found("n2", stranger), ("exec", "x1"): Found("x1", stranger),
                        ("image", "postgres:16"): Found("sha256:p", {}), ("image", "myapp:latest"): Found("sha256:a", {}),
                        ("image", "plugkit-wt-mine:1"): Found("sha256:m", owner.image_labels()),
                        ("image", "plugkit-wt-run:1"): Found("sha256:r", mine)}  # labels a container passed on
        self.made: list[tuple[str, dict]] = []

    async def lookup(self, kind: str, name: str):
        return self.objects.get((kind, name))

    async def make(self, name: str, labels: dict) -> None:
        self.made.append((name, labels))


@pytest.fixture
def worktree(tmp_path):
    tree = tmp_path / "wt"
    (tree / "data").mkdir(parents=True)
    os.symlink("/", tree / "root-link")
    (tree / ".git").write_text("gitdir: /repo/.git/worktrees/w1\n")
    return tree


def policy(worktree, offline: bool = False):
    owner = Owner("att-1", "run-1", "w1", "h" * 16, "r-1", str(worktree), offline)
    engine = FakeEngine(owner)
    return Policy(owner, engine.lookup, engine.make), engine


async def decide(pol: Policy, method: str, target: str, body=None) -> Request:
    req = Request.parse(method, target)
    req.body = None if body is None else json.dumps(body).encode()
    return await pol.decide(req)


async def refused(pol: Policy, method: str, target: str, body=None) -> str:
    with pytest.raises(Refused) as caught:
        await decide(pol, method, target, body)
    return caught.value.line


# Each case in one test, not one test each: the leak check costs ~0.3 s per test on a loaded machine.
HOST_CASES = [
    ({"Privileged": True}, "--privileged is refused"),
    ({"PidMode": "host"}, "--pid=host is refused"),
    ({"NetworkMode": "host"}, "--network=host is refused"),
    ({"IpcMode": "host"}, "--ipc=host is refused"),
    ({"UsernsMode": "host"}, "--userns=host is refused"),
    ({"CapAdd": ["SYS_ADMIN"]}, "--cap-add is refused"),
    ({"Devices": [{"PathOnHost": "/dev/sda"}]}, "--device is refused"),
    ({"SecurityOpt": ["seccomp=unconfined"]}, "--security-opt seccomp=unconfined is refused"),
    ({"MaskedPaths": []}, "systempaths=unconfined is refused"),
    ({"Binds": ["/:/host"]}, "bind mount of / is refused"),
    ({"Binds": ["/etc:/x:ro"]}, "bind mount of /etc is refused"),
    ({"Mounts": [{"Type": "bind", "Source": "/var", "Target": "/x"}]}, "bind mount of /var is refused"),
    ({"Mounts": [{"Type": "volume", "Source": "v", "Target": "/x",
                  "VolumeOptions": {"DriverConfig": {"Name": "local", "Options": {"o": "bind", "device": "/"}}}}]},
     "volume driver options are refused"),
    ({"Binds": ["theirvol:/x"]}, "volume 'theirvol' is not one this worker created"),
    ({"VolumesFrom": ["theirs"]}, "container 'theirs' is not one this worker created"),
    ({"PidMode": "container:theirs"}, "container 'theirs' is not one this worker created"),
    ({"NetworkMode": "theirnet"}, "network 'theirnet' is not one this worker created"),
    ({"LogConfig": {"Type": "syslog", "Config": {"syslog-address": "unix:///run/x.sock"}}}, "--log-driver syslog"),
    ({"LogConfig": {"Type": "json-file", "Config": {"fluentd-address": "x"}}}, "--log-opt fluentd-address"),
]


async def test_rejects_a_container_that_would_reach_the_host_or_anothers_objects(worktree):
    pol, _ = policy(worktree)
    for host, said in HOST_CASES:
        line = await refused(pol, "POST", "/v1.41/containers/create", {"Image": "x", "HostConfig": host})
        assert line.startswith("plugkit: ") and said in line and "\n" not in line, (host, line)


async def test_binds_the_worktree_itself_only_never_a_path_it_could_swap_for_a_link(worktree):
    pol, _ = policy(worktree)
    line = await refused(pol, "POST", "/containers/create", {"HostConfig": {"Binds": [f"{worktree}/root-link:/h"]}})
    assert "bind mount of" in line
    # A directory or file inside: a link by the time the engine mounts it (at start, at each restart).
    for src in (f"{worktree}/data/", f"{worktree}/data/../data"):
        line = await refused(pol, "POST", "/containers/create", {"HostConfig": {"Binds": [f"{src}:/d:ro"]}})
        assert "only the worktree itself may be bound, not a path inside it" in line, line
    line = await refused(pol, "POST", "/containers/create", {"HostConfig": {"Mounts": [
        {"Type": "bind", "Source": f"{worktree}/data", "Target": "/d"}]}})
    assert "only the worktree itself may be bound" in line, line
    req = await decide(pol, "POST", "/containers/create", {"HostConfig": {"Binds": [f"{worktree}/data/..:/w:ro"]}})
    assert json.loads(req.body)["HostConfig"]["Binds"] == [f"{os.path.realpath(worktree)}:/w:ro"]


async def test_labels_what_it_creates_and_a_named_volume_made_for_a_container(worktree):
    pol, engine = policy(worktree)
    req = await decide(pol, "POST", "/v1.41/containers/create?name=web",
                       {"Image": "x", "Labels": {ATTEMPT: "someone-else", "app": "web"},
                        "HostConfig": {"Binds": ["fresh:/data", "myvol:/m"], "NetworkMode": "mynet"}})
    body = json.loads(req.body)
    assert body["Labels"] == {"app": "web", **pol.owner.labels()}  # its own plugkit.* cannot stand in
    assert engine.made == [("fresh", pol.owner.labels())]  # the engine would have made it bare
    assert req.target == "/v1.41/containers/create?name=web"
    for path, body in (("/volumes/create", {"Name": "v"}), ("/networks/create", {"Name": "n", "Driver": "bridge"})):
        req = await decide(pol, "POST", path, body)
        assert json.loads(req.body)["Labels"] == pol.owner.labels()


async def test_rejects_volumes_and_networks_that_reach_the_host(worktree):
    pol, _ = policy(worktree)
    assert "volume driver options" in await refused(pol, "POST", "/volumes/create",
                                                    {"Name": "v", "DriverOpts": {"o": "bind", "device": "/"}})
    assert "network driver 'host'" in await refused(pol, "POST", "/networks/create", {"Name": "n", "Driver": "host"})
    assert "build --network host" in await refused(pol, "POST", "/build?networkmode=host&t=x")


ANOTHERS = [
    ("DELETE", "/v1.41/containers/theirs?force=1"), ("POST", "/containers/theirs/stop"),
    ("POST", "/containers/theirs/attach?stream=1"), ("GET", "/containers/theirs/json"),
    ("POST", "/exec/x1/start"), ("DELETE", "/volumes/theirvol"), ("DELETE", "/networks/theirnet"),
    ("POST", "/commit?container=theirs"), ("DELETE", "/containers/bare"),
]


async def test_rejects_acting_on_an_object_not_labelled_as_its_own(worktree):
    pol, _ = policy(worktree)
    for method, target in ANOTHERS:
        assert "is not one this worker created" in await refused(pol, method, target), target


async def test_an_absent_object_answers_not_found_as_the_engine_would(worktree):
    # docker-compose inspects a network or volume before it creates it: a 404 makes it create one,
    # a 403 stops `up`. A stranger's stays a 403.
    pol, _ = policy(worktree)
    for target in ("/networks/w1_back", "/volumes/w1_data", "/containers/w1_web_1/json"):
        with pytest.raises(Refused) as caught:
            await decide(pol, "GET", target)
        assert caught.value.status == 404 and "of yours" in caught.value.line, target
    with pytest.raises(Refused) as caught:
        await decide(pol, "GET", "/networks/theirnet")
    assert caught.value.status == 403


async def test_acts_on_its_own_by_id_and_lists_only_its_own(worktree):
    pol, _ = policy(worktree)
    req = await decide(pol, "DELETE", "/v1.41/containers/mine?force=1&v=1")
    assert req.target == f"/v1.41/containers/{'c' * 64}?force=1&v=1"  # a name re-taken meanwhile is not hit
    req = await decide(pol, "GET", '/containers/json?all=1&filters={"label":["app=web"]}')
    assert json.loads(req.arg("filters"))["label"] == ["app=web", f"{ATTEMPT}=att-1"]
    req = await decide(pol, "GET", "/volumes")
    assert json.loads(req.arg("filters")) == {"label": [f"{ATTEMPT}=att-1"]}


async def test_rejects_calls_that_are_not_a_workers(worktree):
    pol, _ = policy(worktree)
    for method, target in (("POST", "/swarm/init"), ("POST", "/plugins/pull?remote=x"), ("POST", "/containers/prune"),
                           ("POST", "/volumes/prune"), ("DELETE", "/images/busybox"), ("POST", "/session")):
        assert (await refused(pol, method, target)).startswith("plugkit: "), target


async def test_a_loopback_only_worker_gets_containers_without_a_network(worktree):
    pol, _ = policy(worktree, offline=True)
    req = await decide(pol, "POST", "/containers/create",
                       {"HostConfig": {"NetworkMode": "default"}, "NetworkingConfig": {"EndpointsConfig": {"default": {}}}})
    body = json.loads(req.body)
    assert body["HostConfig"]["NetworkMode"] == "none" and "NetworkingConfig" not in body
    assert "loopback only" in await refused(pol, "POST", "/networks/create", {"Name": "n"})
    assert ("networkmode", "none") in (await decide(pol, "POST", "/build?t=plugkit-wt-x")).query


async def test_the_worktree_mounted_whole_keeps_its_git_pointer_read_only_and_git_itself_is_refused(worktree):
    pol, _ = policy(worktree)
    req = await decide(pol, "POST", "/containers/create", {"HostConfig": {"Binds": [f"{worktree}:/app"]}})
    mounts = json.loads(req.body)["HostConfig"]["Mounts"]
    assert mounts == [{"Type": "bind", "Source": f"{worktree}/.git", "ReadOnly": True, "Target": "/app/.git"}]
    assert "the worktree's .git is refused" in await refused(pol, "POST", "/containers/create",
                                                              {"HostConfig": {"Binds": [f"{worktree}/.git:/g"]}})


async def test_rejects_an_image_name_that_would_stand_in_for_anothers(worktree):
    pol, _ = policy(worktree)
    line = await refused(pol, "POST", "/v1.41/build?t=postgres:16")
    assert "build -t as postgres:16 is refused" in line, line
    assert "myapp:latest is refused" in await refused(pol, "POST", "/images/abc/tag?repo=myapp")
    assert "refused" in await refused(pol, "POST", "/commit?container=mine&repo=postgres&tag=16")
    assert "image load is refused" in await refused(pol, "POST", "/images/load")
    req = await decide(pol, "POST", '/build?t=plugkit-wt-fresh:1&t=plugkit-wt-mine:1&labels={"app":"x","plugkit.built":"other"}')
    assert json.loads(req.arg("labels")) == {"app": "x", **pol.owner.image_labels()}  # its later tag is of its own
    await decide(pol, "POST", "/images/plugkit-wt-mine:1/tag?repo=plugkit-wt-mine&tag=2")
    # A name no image has yet is still the person's to pull: a worker's names begin with its project's.
    line = await refused(pol, "POST", "/build?t=redis:7")
    assert "build -t as redis:7 is refused" in line and "plugkit-wt ($COMPOSE_PROJECT_NAME)" in line, line
    assert "is refused" in await refused(pol, "POST", "/build?t=registry.example/team/redis:7")
    assert "is refused" in await refused(pol, "POST", "/build?t=plugkit-wt2-app:1")  # another item's project
    for name in ("plugkit-wt_web", "plugkit-wt-web:2", "registry.example/team/plugkit-wt:1"):  # compose v1, v2, pushed
        await decide(pol, "POST", f"/build?t={name}")
    # Not an image it built: one that carries a container's labels (a person's commit, a Dockerfile's LABEL).
    assert "is refused" in await refused(pol, "POST", "/images/abc/tag?repo=plugkit-wt-run&tag=1")


async def test_an_image_it_makes_says_so_under_its_own_keys_not_a_containers(worktree):
    # A container takes its image's labels: a person's container run from the worker's image must
    # not carry the attempt's container keys (teardown and the boot sweep remove by them).
    pol, _ = policy(worktree)
    image = pol.owner.image_labels()
    assert image[ATTEMPT] == image["plugkit.home"] == ""  # the keys teardown and the boot sweep match on
    assert pol.owner.built(pol.owner.image_labels()) and not pol.owner.owns(pol.owner.image_labels())
    req = await decide(pol, "POST", "/commit?container=mine&repo=plugkit-wt-snap&tag=1", {"Labels": {"plugkit.attempt": "x"}})
    assert json.loads(req.body or b"")["Labels"] == pol.owner.image_labels()
    req = await decide(pol, "POST", "/commit?container=mine&repo=plugkit-wt-snap&tag=1")
    assert json.loads(req.body or b"")["Labels"] == pol.owner.image_labels()
    line = await refused(pol, "POST", "/commit?container=mine&changes=ENV+A%3D1&changes=lAbEl+plugkit.built%3Dother")
    assert "commit --change LABEL is refused" in line, line
    await decide(pol, "POST", "/images/create?fromImage=postgres&tag=16")  # a pull: the registry's image


async def test_published_ports_stay_on_the_loopback(worktree):
    pol, _ = policy(worktree)
    req = await decide(pol, "POST", "/containers/create", {"HostConfig": {"PortBindings": {
        "80/tcp": [{"HostIp": "", "HostPort": "8080"}], "81/tcp": [{"HostIp": "127.0.0.1", "HostPort": "8081"}]}}})
    bound = json.loads(req.body)["HostConfig"]["PortBindings"]
    assert [b[0]["HostIp"] for b in bound.values()] == ["127.0.0.1", "127.0.0.1"]
    assert "--publish-all is refused" in await refused(pol, "POST", "/containers/create",
                                                       {"HostConfig": {"PublishAllPorts": True}})


SPELLINGS = [
    ({"hostconfig": {"privileged": True}}, "--privileged is refused"),  # the engine's decoder ignores case
    ({"HostConfig": {"\u017fecurityOpt": ["seccomp=unconfined"]}}, "--security-opt"),  # long s folds to s
    ({"HostConfig": {"BINDS": ["/:/h"]}}, "bind mount of / is refused"),
    ({"HostConfig": {"mounts": [{"type": "bind", "source": "/etc", "target": "/e"}]}}, "bind mount of /etc"),
    ({"HostConfig": {"Privileged": False, "privileged": True}}, "the field Privileged is given twice"),
]


async def test_rejects_fields_spelled_as_the_engine_reads_them_not_as_the_rules_did(worktree):
    pol, _ = policy(worktree)
    for body, said in SPELLINGS:
        assert said in await refused(pol, "POST", "/containers/create", body), body


async def test_rejects_paths_that_the_engine_would_read_as_another_route(worktree):
    pol, _ = policy(worktree)
    for target in ("/images/../swarm/init", "/images/%2e%2e/plugins/pull", "/containers//json", "/_ping\n"):
        assert "refused" in await refused(pol, "POST", target), repr(target)


async def test_an_update_of_its_own_container_cannot_add_a_device(worktree):
    pol, _ = policy(worktree)
    assert "devices" in await refused(pol, "POST", "/containers/mine/update", {"devices": [{"PathOnHost": "/dev/sda"}]})
    req = await decide(pol, "POST", "/containers/mine/update", {"Memory": 1 << 20})
    assert req.path == f"/containers/{'c' * 64}/update"
