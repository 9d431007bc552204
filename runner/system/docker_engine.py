"""The runner's own calls to the container engine's API (work_docker): who owns an object (the
proxy's lookups), a labelled volume made on a worker's behalf, and the removal of everything an
attempt's labels name (teardown), or a dead runner left (the boot sweep).

aiohttp over the engine's unix socket; the Docker API as the docker daemon and podman's
compatible service both serve it, unversioned (the engine's own version).
"""

from __future__ import annotations

import json
from typing import Callable, Optional
from urllib.parse import quote

import aiohttp
import psutil

from runner.system.docker_request import BUILT, HOME, RUNNER, Found, built_by

TIMEOUT_S = 30.0
# kind -> (the list endpoint, the removal of one by its id, how an answer names it, its labels)
KINDS: dict[str, tuple[str, str, Callable[[dict], str], Callable[[dict], dict]]] = {
    # Containers first (force: a running one too; v: its anonymous volumes with it), then what they used.
    "container": ("/containers/json?all=1", "/containers/{}?force=1&v=1",
                  lambda o: ((o.get("Names") or [o.get("Id", "")[:12]])[0]).lstrip("/"), lambda o: o.get("Labels") or {}),
    # The images it built (the proxy labels every build; a commit takes its container's labels),
    # unforced: one a container of anyone else's uses, or tagged by someone else too, the engine
    # keeps (409). Its untagged parents go with it unless another image is built on them.
    # An image says whose it is under BUILT: listed by the key, matched by its value read back.
    "image": ("/images/json", "/images/{}", lambda o: (o.get("RepoTags") or [o.get("Id", "")[7:19]])[0],
              lambda o: built_by(o.get("Labels"))),
    "network": ("/networks", "/networks/{}", lambda o: o.get("Name", ""), lambda o: o.get("Labels") or {}),
    "volume": ("/volumes", "/volumes/{}?force=1", lambda o: o.get("Name", ""), lambda o: o.get("Labels") or {}),
}


def runner_instance() -> str:
    """This runner process, as the label plugkit.runner says it: pid and start time (an in-place
    restart keeps both; its attempts were ended, and their objects removed, before the exec)."""
    me = psutil.Process()
    return f"{me.pid}-{int(me.create_time() * 1000)}"


class EngineError(OSError):
    """The engine did not answer, or answered what the runner cannot use."""


class Engine:
    def __init__(self, path: str) -> None:
        self.path = path
        self._http: Optional[aiohttp.ClientSession] = None

    def _session(self) -> aiohttp.ClientSession:
        if self._http is None:
            self._http = aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=self.path),
                                               timeout=aiohttp.ClientTimeout(total=TIMEOUT_S))
        return self._http

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()
            self._http = None

    async def _call(self, method: str, path: str, body: Optional[dict] = None) -> tuple[int, object]:
        try:
            async with self._session().request(method, f"http://engine{path}", json=body) as resp:
                text = await resp.text()
                return resp.status, (json.loads(text) if text.strip() else None)
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            raise EngineError(f"the container engine at {self.path}: {exc.__class__.__name__}") from None

    async def lookup(self, kind: str, name: str) -> Optional[Found]:
        """docker_policy.Lookup: the object by name or id, its labels (an exec's: its container's)."""
        if not name:
            return None
        ref = quote(name, safe=":/@" if kind == "image" else "")  # an image's name has its registry's path
        status, data = await self._call("GET", {"container": f"/containers/{ref}/json", "exec": f"/exec/{ref}/json",
                                                "volume": f"/volumes/{ref}", "network": f"/networks/{ref}",
                                                "image": f"/images/{ref}/json"}[kind])
        if status == 404 or not isinstance(data, dict):
            return None
        if status != 200:
            raise EngineError(f"the container engine answered {status} for a {kind}")
        if kind == "exec":
            container = await self.lookup("container", str(data.get("ContainerID", "")))
            return None if container is None else Found(str(data.get("ID", name)), container.labels)
        if kind in ("container", "image"):
            return Found(str(data.get("Id", "")), (data.get("Config") or {}).get("Labels") or {})
        return Found(str(data.get("Id") or data.get("Name") or name), data.get("Labels") or {})

    async def create_volume(self, name: str, labels: dict) -> None:
        status, _ = await self._call("POST", "/volumes/create", {"Name": name, "Labels": labels})
        if status not in (200, 201):
            raise EngineError(f"the container engine answered {status} making volume {name}")

    async def remove(self, key: str, value: str,
                     keep: Callable[[dict], bool] = lambda labels: False) -> tuple[list[str], list[str]]:
        """Every container, image, network and volume labelled `key`=`value` (an image: under
        BUILT), unless keep(labels): (what was removed, what could not be). Containers first:
        they hold the others."""
        removed: list[str] = []
        notes: list[str] = []
        for kind, (listing, removal, name_of, labels_of) in KINDS.items():
            filters = quote(json.dumps({"label": [BUILT if kind == "image" else f"{key}={value}"]}), safe="")
            sep = "&" if "?" in listing else "?"
            status, data = await self._call("GET", f"{listing}{sep}filters={filters}")
            found = (data.get("Volumes") if isinstance(data, dict) else data) or []
            if status != 200 or not isinstance(found, list):
                notes.append(f"{kind}s not listed (the engine answered {status})")
                continue
            for obj in found:
                if not isinstance(obj, dict) or labels_of(obj).get(key) != value or keep(labels_of(obj)):
                    continue
                ident = obj.get("Id") or obj.get("Name") or ""
                gone, _ = await self._call("DELETE", removal.format(quote(ident, safe="")))
                if gone in (200, 204, 404):
                    removed.append(f"{kind} {name_of(obj)}")
                else:  # 409: in use by what is not the attempt's (a stranger's container of its image)
                    notes.append(f"{kind} {name_of(obj)} kept ({'in use' if gone == 409 else gone})")
        return removed, notes


async def sweep(path: str, home_id: str, runner_id: str) -> tuple[list[str], list[str]]:
    """At a runner's start: what workers of this home left under a runner that is gone (a crash
    gives no attempt its end). The live runner's own objects are kept."""
    engine = Engine(path)
    try:
        return await engine.remove(HOME, home_id, keep=lambda labels: labels.get(RUNNER) == runner_id)
    finally:
        await engine.close()
