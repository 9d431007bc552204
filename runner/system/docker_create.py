"""A worker's `docker run` / `docker create` checked (work_docker): the HostConfig fields that hand
it the host refused, its binds of its worktree itself only (else on its own volumes), the containers and
networks it names its own, its published ports on the loopback only. Pure: the lookups are
docker_policy.Policy's."""

from __future__ import annotations

import os
from typing import Awaitable, Callable

from runner.system.docker_request import PREDEFINED_NETWORKS, Create, Found, Lookup, Owner, Refused, inside

# kind, name, what the worker asked -> the object, or Refused when it is not the attempt's own
Own = Callable[[str, str, str], Awaitable[Found]]


class ContainerRules:
    def __init__(self, owner: Owner, own: Own, lookup: Lookup, make_volume: Create) -> None:
        self.owner, self.own, self.lookup, self.make_volume = owner, own, lookup, make_volume

    async def check(self, body: dict) -> None:
        """Refused, or `body` (spelled as CREATE says: docker_request.canonical) rewritten in place
        as it goes to the engine (labels aside)."""
        host = body.get("HostConfig") or {}
        if not isinstance(host, dict):
            raise Refused("HostConfig is not a JSON object")
        await self._host(host)
        await self._mounts(host, body)
        await self._networks(host, body)
        self._ports(host)
        body["HostConfig"] = host

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
        log = host.get("LogConfig") or {}
        if log.get("Type") not in (None, "", "json-file", "local", "none"):
            raise Refused(f"--log-driver {log['Type']} is refused (the engine, as root, would send the output "
                          "where the worker says); json-file, local or none")
        if any(k not in LOG_OPTIONS for k in (log.get("Config") or {})):
            raise Refused(f"--log-opt {', '.join(sorted(log['Config']))} is refused; {', '.join(LOG_OPTIONS)} only")
        if host.get("Runtime") not in (None, "", "runc"):
            raise Refused(f"--runtime {host['Runtime']} is refused; the engine's default runtime only")
        for key, flag in self.NAMESPACES.items():
            mode = str(host.get(key) or "")
            if mode == "host":
                raise Refused(f"{flag}=host is refused (the host's own namespace)")
            if mode.startswith("container:"):
                found = await self.own("container", mode.split(":", 1)[1], f"{flag}=container: of")
                host[key] = f"container:{found.id}"
        for ref in host.get("VolumesFrom") or []:
            await self.own("container", str(ref).split(":", 1)[0], "--volumes-from")
        for link in host.get("Links") or []:
            await self.own("container", str(link).split(":", 1)[0].lstrip("/"), "--link to")

    async def _volume_source(self, name: str) -> None:
        """A named volume: one of ours, or made now with our labels (the engine would make it bare)."""
        found = await self.lookup("volume", name)
        if found is None:
            await self.make_volume(name, self.owner.labels())
        elif not self.owner.owns(found.labels):
            raise Refused(f"volume {name!r} is not one this worker created; it mounts only its own")

    def _bind_source(self, src: str, dst: str, host: dict) -> str:
        """The worktree itself, resolved, with its `.git` read-only over it inside; nothing else."""
        # Checked here, on the runner's view of the path: a link in the worktree to / resolves
        # to / and is refused.
        if not inside(src, self.owner.worktree):
            raise Refused(f"bind mount of {src} is refused: only the worktree itself may be bound "
                          f"({self.owner.worktree})")
        dot_git = os.path.join(self.owner.worktree, ".git")
        if inside(src, dot_git):
            raise Refused("bind mount of the worktree's .git is refused (it says which repository the runner's "
                          "git reads)")
        real, tree = os.path.realpath(src), os.path.realpath(self.owner.worktree)
        # The engine resolves the path again when the container starts (and at every restart): a
        # directory or file inside the worktree, which the worker can swap for a link to / in
        # between, hands it the host. The worktree itself it cannot swap: its parent is read-only
        # to the worker's sandbox and to every container of it.
        if real != tree:
            raise Refused(f"bind mount of {src} is refused: only the worktree itself may be bound, not a path "
                          f"inside it (it could be swapped for a link before the engine mounts it); bind {tree} "
                          "and use the path inside the container, or use a named volume")
        # The engine is outside the sandbox, which keeps .git read-only: a container writing the
        # worktree's `.git` file would point the runner's own git at a repository it made.
        if os.path.lexists(dot_git):
            host["Mounts"] = [*(host.get("Mounts") or []), {"Type": "bind", "Source": dot_git, "ReadOnly": True,
                                                            "Target": dst.rstrip("/") + "/.git"}]
        return real

    async def _mounts(self, host: dict, body: dict) -> None:
        binds = []
        for mount in host.get("Mounts") or []:
            kind, src = mount.get("Type"), str(mount.get("Source") or "")
            if kind == "bind":
                mount["Source"] = self._bind_source(src, str(mount.get("Target") or ""), host)
            elif kind == "volume":
                driver = (mount.get("VolumeOptions") or {}).get("DriverConfig") or {}
                if driver.get("Name") not in (None, "", "local") or driver.get("Options"):
                    raise Refused("volume driver options are refused (o=bind or device= would mount a host path)")
                if src:
                    await self._volume_source(src)
            elif kind != "tmpfs":
                raise Refused(f"a {kind} mount is refused; bind (inside the worktree), volume or tmpfs")
        for bind in host.get("Binds") or []:
            src, sep, rest = str(bind).partition(":")
            if src.startswith("/"):
                src = self._bind_source(src, rest.split(":", 1)[0], host)
            elif src:
                await self._volume_source(src)
            binds.append(src + sep + rest)
        if binds:
            host["Binds"] = binds

    def _ports(self, host: dict) -> None:
        """Published ports on the loopback only: a worker's server is for this machine, not its network."""
        if host.get("PublishAllPorts"):
            raise Refused("--publish-all is refused (every port on every interface); publish with "
                          "-p 127.0.0.1:PORT:PORT")
        for bindings in (host.get("PortBindings") or {}).values():
            for bound in bindings or []:
                if isinstance(bound, dict) and bound.get("HostIp") in (None, "", "0.0.0.0", "::"):
                    bound["HostIp"] = "127.0.0.1"

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
            await self.own("network", name, "--network")


LOG_OPTIONS = ("max-size", "max-file", "compress", "labels", "env", "tag")
_MOUNT = {"Type": None, "Source": None, "Target": None, "ReadOnly": None,
          "VolumeOptions": {"DriverConfig": {"Name": None, "Options": None}}}
# What the rules read of a container's create body, as the engine spells it.
CREATE: dict = {
    "Labels": None, "NetworkingConfig": {"EndpointsConfig": None},
    "HostConfig": {**{k: None for k in (*ContainerRules.NEVER, *ContainerRules.NAMESPACES, "SecurityOpt", "Runtime",
                                          "VolumesFrom", "Links", "Binds", "PublishAllPorts")},
                   "LogConfig": {"Type": None, "Config": None},
                   "Mounts": [_MOUNT], "PortBindings": {"*": [{"HostIp": None, "HostPort": None}]}},
}
