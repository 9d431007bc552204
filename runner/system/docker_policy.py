"""What a `plugkit work` worker may ask of the container engine through its proxy (work_docker):
the routes as rows, the checks on a create's body, the labels added, each refusal one line.

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
import os
import re
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Optional
from urllib.parse import parse_qsl, quote, unquote, urlencode

ATTEMPT, RUN, ITEM, HOME, RUNNER = ("plugkit.attempt", "plugkit.run", "plugkit.item", "plugkit.home",
                                    "plugkit.runner")
MAX_BODY = 1 << 20  # a create's JSON; a build's context streams through unread
PREDEFINED_NETWORKS = frozenset({"", "default", "bridge", "none"})
_VERSION = re.compile(r"^/v\d+\.\d+(?=/)")


class Refused(Exception):
    """What the worker reads (`Error response from daemon: <line>`): what was refused and why."""

    def __init__(self, line: str) -> None:
        super().__init__(line)
        self.line = f"plugkit: {line}"


@dataclass(frozen=True)
class Owner:
    """Whose proxy this is: the labels it adds, the worktree its bind mounts must stay in."""
    attempt: str
    run: str
    item: str
    home: str  # tags.home_id of the runner's home: a restarted runner finds what a dead one left
    runner: str
    worktree: str
    offline: bool = False  # a loopback-only worker (work_network): its containers get no network either

    def labels(self) -> dict[str, str]:
        return {ATTEMPT: self.attempt, RUN: self.run, ITEM: self.item, HOME: self.home, RUNNER: self.runner}

    def owns(self, labels: Optional[dict]) -> bool:
        return bool(labels) and labels.get(ATTEMPT) == self.attempt


@dataclass(frozen=True)
class Found:
    """An object the engine has: its id (what the request is rewritten to name) and labels."""
    id: str
    labels: dict


# kind ("container" | "exec" | "volume" | "network"), name or id -> Found, or None when absent.
# An exec's labels are its container's.
Lookup = Callable[[str, str], Awaitable[Optional[Found]]]
# name, labels -> a named volume created through the engine before a container that mounts it
Create = Callable[[str, dict], Awaitable[None]]


@dataclass
class Request:
    method: str
    path: str  # without the API version prefix, percent-encoded as sent
    query: list[tuple[str, str]]
    prefix: str = ""  # "/v1.41" or ""
    body: Optional[bytes] = None  # read only for the routes that check it (READS_BODY)

    @classmethod
    def parse(cls, method: str, target: str) -> "Request":
        path, _, qs = target.partition("?")
        m = _VERSION.match(path)
        prefix = m.group(0) if m else ""
        return cls(method.upper(), path[len(prefix):] or "/", parse_qsl(qs, keep_blank_values=True), prefix)

    @property
    def target(self) -> str:
        return self.prefix + self.path + (f"?{urlencode(self.query)}" if self.query else "")

    def arg(self, name: str) -> str:
        return next((v for k, v in self.query if k == name), "")


# (methods, path pattern, check): the first row that matches decides. A check is a name of a
# Policy method; "refuse:<why>" refuses with that line.
ROUTES: tuple[tuple[str, str, str], ...] = (
    ("HEAD GET", r"/_ping", "passes"),
    ("GET", r"/(version|info)", "passes"),
    ("POST", r"/containers/create", "create_container"),
    ("GET", r"/containers/json", "list_own"),
    ("POST", r"/containers/prune", "refuse:prune is refused; remove your own containers by name"),
    ("POST", r"/containers/([^/]+)/exec", "create_exec"),
    ("GET HEAD PUT POST DELETE", r"/containers/([^/]+)(/[a-z]+)?", "container"),
    ("GET POST", r"/exec/([^/]+)/(json|start|resize)", "exec"),
    ("POST", r"/images/prune", "refuse:image prune is refused (the images are shared)"),
    ("DELETE", r"/images/.+", "refuse:image removal is refused (the images are shared with others)"),
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
_ROUTES = tuple((frozenset(m.split()), re.compile(p + r"$"), c) for m, p, c in ROUTES)
READS_BODY = frozenset({"create_container", "create_exec", "create_volume", "create_network", "connect"})


def route(req: Request) -> tuple[str, tuple[str, ...]]:
    """(the check, the path's groups) for a request, or Refused for a route not in the table."""
    for methods, pattern, check in _ROUTES:
        m = pattern.match(req.path)
        if m and req.method in methods:
            if check.startswith("refuse:"):
                raise Refused(check[len("refuse:"):])
            return check, tuple(unquote(g) for g in m.groups() if g is not None)
    raise Refused(f"{req.method} {req.path} is not passed to a worker (swarm, plugins and system-wide calls "
                  "are not a worker's); containers, volumes, networks, images and builds are")


def _json(req: Request) -> dict:
    try:
        data = json.loads(req.body or b"{}")
    except ValueError:
        raise Refused("the request body is not JSON") from None
    if not isinstance(data, dict):
        raise Refused("the request body is not a JSON object")
    return data


def _labelled(given: Any, owner: Owner) -> dict:
    """The object's labels: the worker's own, none of plugkit's it made up, then the attempt's."""
    base = given if isinstance(given, dict) else {}
    return {**{k: v for k, v in base.items() if not str(k).startswith("plugkit.")}, **owner.labels()}


def _inside(path: str, root: str) -> bool:
    path, root = os.path.realpath(path), os.path.realpath(root)
    return path == root or path.startswith(root.rstrip("/") + "/")


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
            raise Refused(f"no {kind} {name!r} of yours")  # never says whether a stranger's exists
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
        body = _json(req)
        if body.get("Privileged"):
            raise Refused("exec --privileged is refused (a privileged process is root on the host)")
        req.path = f"/containers/{found.id}/exec"

    async def volume(self, req: Request, name: str) -> None:
        await self._own("volume", name, f"{req.method} on")

    async def network(self, req: Request, name: str) -> None:
        if req.method == "GET" and name in PREDEFINED_NETWORKS - {""}:
            return
        found = await self._own("network", name, f"{req.method} on")
        req.path = f"/networks/{found.id}"

    async def connect(self, req: Request, name: str, action: str) -> None:
        found = await self._own("network", name, f"{action} to")
        body = _json(req)
        await self._own("container", str(body.get("Container", "")), action)
        req.path = f"/networks/{found.id}/{action}"

    async def commit(self, req: Request) -> None:
        await self._own("container", req.arg("container"), "commit of")

    async def create_volume(self, req: Request) -> None:
        body = _json(req)
        if body.get("Driver") not in (None, "", "local"):
            raise Refused(f"volume driver {body['Driver']!r} is refused; use the local driver")
        if body.get("DriverOpts"):
            raise Refused("volume driver options are refused (o=bind or device= would mount a host path)")
        body["Labels"] = _labelled(body.get("Labels"), self.owner)
        req.body = json.dumps(body).encode()

    async def create_network(self, req: Request) -> None:
        if self.owner.offline:
            raise Refused("network create is refused: this worker's network is loopback only "
                          "(work_network), and so are its containers (--network none)")
        body = _json(req)
        if body.get("Driver") not in (None, "", "bridge"):
            raise Refused(f"network driver {body['Driver']!r} is refused (it reaches the host's network); "
                          "use a bridge network")
        if body.get("Options") or body.get("ConfigFrom") or body.get("Ingress"):
            raise Refused("network driver options are refused (they name the host's interfaces)")
        body["Labels"] = _labelled(body.get("Labels"), self.owner)
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

    async def create_container(self, req: Request) -> None:
        body = _json(req)
        host = body.get("HostConfig") or {}
        if not isinstance(host, dict):
            raise Refused("HostConfig is not a JSON object")
        await self._host(host)
        await self._mounts(host, body)
        await self._networks(host, body)
        body["Labels"] = _labelled(body.get("Labels"), self.owner)
        body["HostConfig"] = host
        req.body = json.dumps(body).encode()

    # --- a container's HostConfig -----------------------------------------------------------

    # HostConfig key -> the flag a worker typed: "host" here is the host's own namespace.
    NAMESPACES = {"PidMode": "--pid", "IpcMode": "--ipc", "UTSMode": "--uts", "UsernsMode": "--userns",
                  "CgroupnsMode": "--cgroupns", "NetworkMode": "--network", "Cgroup": "--cgroup"}
    # HostConfig key -> (flag, why): refused whenever set at all.
    NEVER = {"Privileged": ("--privileged", "a privileged container is root on the host"),
             "CapAdd": ("--cap-add", "added capabilities reach the host's kernel"),
             "Devices": ("--device", "a host device"),
             "DeviceRequests": ("--gpus/--device", "a host device"),
             "DeviceCgroupRules": ("--device-cgroup-rule", "host devices"),
             "CgroupParent": ("--cgroup-parent", "a cgroup outside the engine's"),
             "VolumeDriver": ("--volume-driver", "a volume plugin"),
             "MaskedPaths": ("--security-opt systempaths=unconfined", "the host's /proc and /sys unmasked"),
             "ReadonlyPaths": ("--security-opt systempaths=unconfined", "the host's /proc and /sys writable")}

    SET_AT_ALL = frozenset({"MaskedPaths", "ReadonlyPaths"})

    async def _host(self, host: dict) -> None:
        for key, (flag, why) in self.NEVER.items():
            # MaskedPaths: [] is what unmasks /proc and /sys: set at all is refused there
            if host.get(key) or (key in self.SET_AT_ALL and host.get(key) is not None):
                raise Refused(f"{flag} is refused ({why})")
        for opt in host.get("SecurityOpt") or []:
            if not str(opt).startswith("no-new-privileges"):
                raise Refused(f"--security-opt {opt} is refused (it loosens the container's confinement)")
        if host.get("Runtime") not in (None, "", "runc"):
            raise Refused(f"--runtime {host['Runtime']} is refused; the engine's default runtime only")
        for key, flag in self.NAMESPACES.items():
            mode = str(host.get(key) or "")
            if mode == "host":
                raise Refused(f"{flag}=host is refused (the host's own namespace)")
            if mode.startswith("container:"):
                found = await self._own("container", mode.split(":", 1)[1], f"{flag}=container: of")
                host[key] = f"container:{found.id}"
        for ref in host.get("VolumesFrom") or []:
            await self._own("container", str(ref).split(":", 1)[0], "--volumes-from")
        for link in host.get("Links") or []:
            await self._own("container", str(link).split(":", 1)[0].lstrip("/"), "--link to")

    async def _volume_source(self, name: str) -> None:
        """A named volume: one of ours, or made now with our labels (the engine would make it bare)."""
        found = await self.lookup("volume", name)
        if found is None:
            await self.make_volume(name, self.owner.labels())
        elif not self.owner.owns(found.labels):
            raise Refused(f"volume {name!r} is not one this worker created; it mounts only its own")

    def _bind_source(self, src: str) -> None:
        # Checked here, on the runner's view of the path: a link in the worktree to / resolves
        # to / and is refused. (A link swapped in after this check is the engine's to follow.)
        if not _inside(src, self.owner.worktree):
            raise Refused(f"bind mount of {src} is refused: only paths inside the worktree "
                          f"({self.owner.worktree}) may be mounted")

    async def _mounts(self, host: dict, body: dict) -> None:
        binds = []
        for bind in host.get("Binds") or []:
            src, sep, rest = str(bind).partition(":")
            if src.startswith("/"):
                self._bind_source(src)
                src = os.path.realpath(src)
            elif src:
                await self._volume_source(src)
            binds.append(src + sep + rest)
        if binds:
            host["Binds"] = binds
        for mount in host.get("Mounts") or []:
            kind, src = mount.get("Type"), str(mount.get("Source") or "")
            if kind == "bind":
                self._bind_source(src)
                mount["Source"] = os.path.realpath(src)
            elif kind == "volume":
                driver = (mount.get("VolumeOptions") or {}).get("DriverConfig") or {}
                if driver.get("Name") not in (None, "", "local") or driver.get("Options"):
                    raise Refused("volume driver options are refused (o=bind or device= would mount a host path)")
                if src:
                    await self._volume_source(src)
            elif kind != "tmpfs":
                raise Refused(f"a {kind} mount is refused; bind (inside the worktree), volume or tmpfs")

    async def _networks(self, host: dict, body: dict) -> None:
        names = list(((body.get("NetworkingConfig") or {}).get("EndpointsConfig") or {}))
        mode = str(host.get("NetworkMode") or "")
        if self.owner.offline:
            if mode not in ("", "default", "none") or any(n not in ("default", "none") for n in names):
                raise Refused("networks are refused: this worker's network is loopback only (work_network), "
                              "and so are its containers (--network none)")
            host["NetworkMode"] = "none"
            body.pop("NetworkingConfig", None)
            return
        for name in {*names, *([mode] if not mode.startswith("container:") else [])} - PREDEFINED_NETWORKS:
            await self._own("network", name, "--network")
