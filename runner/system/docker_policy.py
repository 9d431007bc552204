"""What a `plugkit work` worker may ask of the container engine through its proxy (work_docker):
the routes as rows, the labels added, each refusal one line (a container's create body is checked
by runner/system/docker_create.py).

A Docker daemon is root on the host: `-v /:/host`, `--privileged`, `--pid=host` or a device hands
the worker the machine, and `docker rm -f` of a stranger's container ends someone else's work. So
every object the worker creates carries its attempt's labels (which the engine keeps, and teardown
finds it by), anything naming an existing object must name one carrying them, and the host's
namespaces, devices, capabilities and paths outside the worktree are refused. A route not in the
table is refused: swarm, plugins, prunes and system-wide calls are not a worker's.

Pure: who owns an object is asked of the engine by the caller (`Lookup`); docker_proxy.py does I/O.
"""

from __future__ import annotations

import json
import re
from urllib.parse import quote, unquote

from runner.system.docker_create import CREATE, ContainerRules
from runner.system.docker_request import (ATTEMPT, PREDEFINED_NETWORKS, Absent, Create, Found, Lookup, Owner,
                                          Refused, Request, json_body, labelled)

# (methods, path pattern, check): the first row that matches decides. A check is a name of a
# Policy method; "refuse:<why>" refuses with that line.
ROUTES: tuple[tuple[str, str, str], ...] = (
    ("HEAD GET", r"/_ping", "passes"),
    ("GET", r"/(version|info)", "passes"),
    ("POST", r"/containers/create", "create_container"),
    ("GET", r"/containers/json", "list_own"),
    ("POST", r"/containers/prune", "refuse:prune is refused; remove your own containers by name"),
    ("POST", r"/containers/([^/]+)/exec", "create_exec"),
    ("POST", r"/containers/([^/]+)/update", "update"),
    ("GET HEAD PUT POST DELETE", r"/containers/([^/]+)(/[a-z]+)?", "container"),
    ("GET POST", r"/exec/([^/]+)/(json|start|resize)", "exec"),
    ("POST", r"/images/prune", "refuse:image prune is refused (the images are shared)"),
    ("DELETE", r"/images/.+", "refuse:image removal is refused (the images are shared with others)"),
    ("POST", r"/images/load", "refuse:image load is refused (a loaded image takes whatever names it carries); "
                              "build it instead"),
    ("POST", r"/images/(.+)/tag", "tag"),
    ("POST", r"/images/create", "pull"),
    ("GET POST", r"/images/.+", "passes"),
    ("POST", r"/build", "build"),
    ("POST", r"/(session|grpc)", "refuse:BuildKit sessions are refused; build with DOCKER_BUILDKIT=0"),
    ("POST", r"/build/prune", "refuse:build cache prune is refused"),
    ("POST", r"/commit", "commit"),
    ("POST", r"/volumes/create", "create_volume"),
    ("GET", r"/volumes", "list_own"),
    ("POST", r"/volumes/prune", "refuse:prune is refused; remove your own volumes by name"),
    ("GET DELETE", r"/volumes/([^/]+)", "volume"),
    ("POST", r"/networks/create", "create_network"),
    ("GET", r"/networks", "passes"),
    ("POST", r"/networks/prune", "refuse:prune is refused; remove your own networks by name"),
    ("POST", r"/networks/([^/]+)/(connect|disconnect)", "connect"),
    ("GET DELETE", r"/networks/([^/]+)", "network"),
    ("GET", r"/events", "list_own"),
    ("GET", r"/distribution/.+/json", "passes"),
)
UPDATE_NEVER = ("Devices", "DeviceCgroupRules", "DeviceRequests", "CgroupParent")
_ROUTES = tuple((frozenset(m.split()), re.compile(p), c) for m, p, c in ROUTES)
READS_BODY = frozenset({"create_container", "create_exec", "create_volume", "create_network", "connect", "update",
                        "commit"})


def route(req: Request) -> tuple[str, tuple[str, ...]]:
    """(the check, the path's groups) for a request, or Refused for a route not in the table."""
    path = unquote(req.path)
    if any(ord(c) < 0x21 or ord(c) == 0x7f for c in req.path + req.target) or \
            any(part in (".", "..") for part in path.split("/")) or "//" in path:
        raise Refused("a path with control characters or dot segments is refused")
    for methods, pattern, check in _ROUTES:
        m = pattern.fullmatch(req.path)
        if m and req.method in methods:
            if check.startswith("refuse:"):
                raise Refused(check[len("refuse:"):])
            return check, tuple(unquote(g) for g in m.groups() if g is not None)
    raise Refused(f"{req.method} {req.path} is not passed to a worker (swarm, plugins and system-wide calls "
                  "are not a worker's); containers, volumes, networks, images and builds are")


class Policy:
    """One attempt's rules: `decide` checks a request and returns it as it goes to the engine."""

    def __init__(self, owner: Owner, lookup: Lookup, make_volume: Create) -> None:
        self.owner, self.lookup, self.make_volume = owner, lookup, make_volume

    async def decide(self, req: Request) -> Request:
        check, groups = route(req)
        await getattr(self, check)(req, *groups)
        return req

    async def _own(self, kind: str, name: str, what: str) -> Found:
        found = await self.lookup(kind, name)
        if found is None:
            raise Absent(f"no {kind} {name!r} of yours")  # never says whether a stranger's exists
        if not self.owner.owns(found.labels):
            raise Refused(f"{kind} {name!r} is not one this worker created; it acts only on its own ({what} refused)")
        return found

    # --- the rows -------------------------------------------------------------------------

    async def passes(self, req: Request, *_groups: str) -> None:
        return None

    async def list_own(self, req: Request, *_groups: str) -> None:
        """ps, volume ls, events: only what carries this attempt's label (filters are ANDed)."""
        raw = req.arg("filters")
        try:
            filters = json.loads(raw) if raw else {}
        except ValueError:
            raise Refused("the filters parameter is not JSON") from None
        if not isinstance(filters, dict):
            raise Refused("the filters parameter is not a JSON object")
        label = filters.get("label") or []
        label = list(label) if isinstance(label, list) else [k for k, on in dict(label).items() if on]
        filters["label"] = [*label, f"{ATTEMPT}={self.owner.attempt}"]
        req.query = [(k, v) for k, v in req.query if k != "filters"] + [("filters", json.dumps(filters))]

    async def container(self, req: Request, name: str, action: str = "") -> None:
        found = await self._own("container", name, f"{req.method} {action.strip('/') or 'it'}")
        # Named by id from here: a name freed and taken by another's container cannot be acted on.
        req.path = f"/containers/{found.id}{action}"

    async def exec(self, req: Request, exec_id: str, action: str) -> None:
        found = await self._own("exec", exec_id, f"exec {action} in")
        req.path = f"/exec/{quote(found.id)}/{action}"

    async def create_exec(self, req: Request, name: str) -> None:
        found = await self._own("container", name, "exec in")
        body = json_body(req, {"Privileged": None})
        if body.get("Privileged"):
            raise Refused("exec --privileged is refused (a privileged process is root on the host)")
        req.path = f"/containers/{found.id}/exec"

    async def update(self, req: Request, name: str) -> None:
        found = await self._own("container", name, "update of")
        body = json_body(req, {k: None for k in UPDATE_NEVER})
        if any(body.get(k) for k in UPDATE_NEVER):
            raise Refused("update with devices or a cgroup parent is refused (host devices)")
        req.path = f"/containers/{found.id}/update"

    async def volume(self, req: Request, name: str) -> None:
        await self._own("volume", name, f"{req.method} on")

    async def network(self, req: Request, name: str) -> None:
        if req.method == "GET" and name in PREDEFINED_NETWORKS - {""}:
            return
        found = await self._own("network", name, f"{req.method} on")
        req.path = f"/networks/{found.id}"

    async def connect(self, req: Request, name: str, action: str) -> None:
        if self.owner.offline:
            raise Refused(f"network {action} is refused: this worker's network is loopback only (work_network)")
        if name not in PREDEFINED_NETWORKS - {""}:
            name = (await self._own("network", name, f"{action} to")).id
        body = json_body(req, {"Container": None})
        await self._own("container", str(body.get("Container", "")), action)
        req.path = f"/networks/{quote(name, safe='')}/{action}"

    async def commit(self, req: Request) -> None:
        await self._own("container", req.arg("container"), "commit of")
        await self._new_name(req.arg("repo"), req.arg("tag"), "commit")
        # --change is Dockerfile text applied over the labels below: a LABEL there could name
        # another attempt as the image's builder (its teardown would remove it), however spelled.
        if any("label" in v.lower() for k, v in req.query if k == "changes"):
            raise Refused("commit --change LABEL is refused (plugkit's labels say whose an image is); "
                          "put the label in a Dockerfile and build")
        # The image would take its container's labels, the attempt's: a container run from it by
        # anyone would then go with this attempt. It carries the image keys instead.
        body = json_body(req, {"Labels": None})
        body["Labels"] = labelled(body.get("Labels"), self.owner, image=True)
        req.body = json.dumps(body).encode()

    async def tag(self, req: Request, name: str) -> None:
        await self._new_name(req.arg("repo"), req.arg("tag"), f"tag of {name}")

    async def pull(self, req: Request) -> None:
        # A pull takes the registry's image under its own name; an import (fromSrc) names a local tar.
        if req.arg("fromSrc"):
            await self._new_name(req.arg("repo"), req.arg("tag"), "import")

    async def _new_name(self, repo: str, tag: str, what: str) -> None:
        """An image name the worker gives (build -t, tag, commit, import): one it made, or a new one
        under its project's name. The image store is shared: a worker's image under `postgres:16` (pulled
        or not yet) or the person's own app's name is what the person's next `docker run` starts."""
        if not repo or "@" in repo:
            return
        if not tag and ":" not in repo.rsplit("/", 1)[-1]:
            tag = "latest"
        ref = f"{repo}:{tag}" if tag else repo
        found = await self.lookup("image", ref)
        if found is not None and not self.owner.built(found.labels):
            raise Refused(f"{what} as {ref} is refused: an image of that name exists that this worker did not "
                          "build (others run it); use a new name")
        project, last = self.owner.project(), repo.rsplit("/", 1)[-1]
        # A name nobody else's `docker run` reaches (and not another item's: plugkit-w1 is no plugkit-w10).
        if not (last.startswith(project) and last[len(project):][:1] in ("", "-", "_", ":")):
            raise Refused(f"{what} as {ref} is refused: a worker's image names begin with its project's, "
                          f"{project} ($COMPOSE_PROJECT_NAME), e.g. {project}-app:1")

    async def create_volume(self, req: Request) -> None:
        body = json_body(req, {"Driver": None, "DriverOpts": None, "Labels": None})
        if body.get("Driver") not in (None, "", "local"):
            raise Refused(f"volume driver {body['Driver']!r} is refused; use the local driver")
        if body.get("DriverOpts"):
            raise Refused("volume driver options are refused (o=bind or device= would mount a host path)")
        body["Labels"] = labelled(body.get("Labels"), self.owner)
        req.body = json.dumps(body).encode()

    async def create_network(self, req: Request) -> None:
        if self.owner.offline:
            raise Refused("network create is refused: this worker's network is loopback only "
                          "(work_network), and so are its containers (--network none)")
        body = json_body(req, {"Driver": None, "Options": None, "ConfigFrom": None, "Ingress": None, "Labels": None})
        if body.get("Driver") not in (None, "", "bridge"):
            raise Refused(f"network driver {body['Driver']!r} is refused (it reaches the host's network); "
                          "use a bridge network")
        if body.get("Options") or body.get("ConfigFrom") or body.get("Ingress"):
            raise Refused("network driver options are refused (they name the host's interfaces)")
        body["Labels"] = labelled(body.get("Labels"), self.owner)
        req.body = json.dumps(body).encode()

    async def build(self, req: Request) -> None:
        mode = req.arg("networkmode")
        if mode == "host":
            raise Refused("build --network host is refused (the host's network namespace)")
        if self.owner.offline:  # a loopback-only worker's build reaches no more than the worker
            req.query = [(k, v) for k, v in req.query if k != "networkmode"] + [("networkmode", "none")]
        remote = req.arg("remote")
        if remote and not remote.startswith(("https://", "http://")):
            raise Refused("build from a remote other than an http(s) URL is refused; send the context")
        for name in [v for k, v in req.query if k == "t"]:
            await self._new_name(name, "", "build -t")
        try:  # the image carries the attempt's labels: a later tag of it by this worker is of its own
            given = json.loads(req.arg("labels") or "{}")
        except ValueError:
            raise Refused("the labels parameter is not JSON") from None
        req.query = [(k, v) for k, v in req.query if k != "labels"] + [
            ("labels", json.dumps(labelled(given, self.owner, image=True)))]

    async def create_container(self, req: Request) -> None:
        body = json_body(req, CREATE)
        await ContainerRules(self.owner, self._own, self.lookup, self.make_volume).check(body)
        body["Labels"] = labelled(body.get("Labels"), self.owner)
        req.body = json.dumps(body).encode()
