"""The words the work_docker proxy's rules speak: the labels it adds, the owner of an attempt's
objects, an object the engine has, a request as the worker sent it, and a refusal's one line.
Pure (runner/system/docker_policy.py decides, docker_proxy.py does the I/O)."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Optional
from urllib.parse import parse_qsl, urlencode

ATTEMPT, RUN, ITEM, HOME, RUNNER = ("plugkit.attempt", "plugkit.run", "plugkit.item", "plugkit.home",
                                    "plugkit.runner")
# Whose an image is: {"plugkit.attempt": ..., "plugkit.home": ..., "plugkit.runner": ...} as JSON, under
# one key of its own. Not the container keys: a container inherits its image's labels, so a person's
# `docker run` of a worker's image would be torn down with the worker's attempt (or swept at boot);
# an image the proxy lets in has those that removal matches on blank. One key, and two blanks: the
# engine's legacy builder takes about a second per label.
BUILT = "plugkit.built"
MAX_BODY = 1 << 20  # a create's JSON; a build's context streams through unread
PREDEFINED_NETWORKS = frozenset({"", "default", "bridge", "none"})
_VERSION = re.compile(r"^/v\d+\.\d+(?=/)")
# An image a worker names (build -t, tag, commit, import) begins with its project's name: the image
# store is shared, and a worker's `postgres:16` built before the person ever pulled one is what the
# person's next `docker run postgres:16` starts, outside every sandbox. The same name is the worker's
# COMPOSE_PROJECT_NAME (sandbox.py sets it), so compose's own image names (<project>-<service>,
# <project>_<service>) pass.
PROJECT_PREFIX = "plugkit-"


def project_name(worktree: str) -> str:
    """A worker's compose project, and the start of every image name it gives: from its worktree."""
    return PROJECT_PREFIX + re.sub(r"[^a-z0-9_-]", "-", os.path.basename(os.path.realpath(worktree)).lower())


class Refused(Exception):
    """What the worker reads (`Error response from daemon: <line>`): what was refused and why."""

    status = 403

    def __init__(self, line: str) -> None:
        super().__init__(line)
        self.line = f"plugkit: {line}"


class Absent(Refused):
    """No such object (of the worker's): 404, as the engine says it. A client that inspects before
    it creates (docker-compose: a network, a volume) creates it on a 404, and stops on a 403."""

    status = 404


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

    def project(self) -> str:
        return project_name(self.worktree)

    def owns(self, labels: Optional[dict]) -> bool:
        return bool(labels) and labels.get(ATTEMPT) == self.attempt

    def image_labels(self) -> dict[str, str]:
        """An image it builds or commits: the keys removal matches a container by blanked, whose it is under BUILT."""
        return {ATTEMPT: "", HOME: "", BUILT: json.dumps({ATTEMPT: self.attempt, HOME: self.home, RUNNER: self.runner})}

    def built(self, labels: Optional[dict]) -> bool:
        return built_by(labels).get(ATTEMPT) == self.attempt


def built_by(labels: Optional[dict]) -> dict:
    """An image's BUILT label read back as container keys ({} when it has none, or not as ours)."""
    try:
        found = json.loads((labels or {}).get(BUILT) or "{}")
    except ValueError:
        return {}
    return {k: v for k, v in found.items() if isinstance(v, str)} if isinstance(found, dict) else {}


@dataclass(frozen=True)
class Found:
    """An object the engine has: its id (what the request is rewritten to name) and labels."""
    id: str
    labels: dict


# kind ("container" | "exec" | "volume" | "network" | "image"), name or id -> Found, or None when absent.
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


# A body's shape, as far as the rules read it: field -> its own shape (None: a leaf or a map the
# rules read as given), [shape]: a list of those, {"*": shape}: a map of those.
Shape = Optional[dict]


def json_body(req: Request, shape: dict) -> dict:
    """The request's JSON object, its fields spelled as `shape` spells them (see canonical)."""
    try:
        data = json.loads(req.body or b"{}")
    except ValueError:
        raise Refused("the request body is not JSON") from None
    if not isinstance(data, dict):
        raise Refused("the request body is not a JSON object")
    canonical(data, shape)
    return data


def canonical(data: Any, shape: Any) -> None:
    """Renames, in place, every field the rules read to its canonical spelling. The engine's JSON
    decoder (Go's) matches a struct's field names without regard to case, the Kelvin sign and the
    long s included: {"hostconfig": {"privileged": true}} is a privileged container there. A field
    given twice under two spellings is refused: which one the engine takes is its choice, not ours."""
    if isinstance(shape, list):
        for item in data if isinstance(data, list) else []:
            canonical(item, shape[0])
        return
    if not isinstance(shape, dict) or not isinstance(data, dict):
        return
    if set(shape) == {"*"}:
        for value in data.values():
            canonical(value, shape["*"])
        return
    names = {name.casefold(): name for name in shape}
    seen: set[str] = set()
    for key in list(data):
        name = names.get(str(key).casefold())
        if name is None:
            continue
        if name in seen:
            raise Refused(f"the field {name} is given twice (as {key!r} too)")
        seen.add(name)
        if key != name:
            data[name] = data.pop(key)
        canonical(data[name], shape[name])


def labelled(given: Any, owner: Owner, image: bool = False) -> dict:
    """The object's labels: the worker's own, none of plugkit's it made up, then the attempt's (an
    image's: Owner.image_labels; they override its Dockerfile's LABEL and its base image's)."""
    base = given if isinstance(given, dict) else {}
    return {**{k: v for k, v in base.items() if not str(k).startswith("plugkit.")},
            **(owner.image_labels() if image else owner.labels())}


def inside(path: str, root: str) -> bool:
    path, root = os.path.realpath(path), os.path.realpath(root)
    return path == root or path.startswith(root.rstrip("/") + "/")
