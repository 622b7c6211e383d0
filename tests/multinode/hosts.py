"""Two "hosts" on one machine: a network namespace each, joined by a veth pair, each with its own /etc/hosts
(what `ip netns exec` mounts from /etc/netns/NAME) and its own /dev/shm (a mount namespace per process),
the way two pods of a LeaderWorkerSet have their own network, name lookup and shared memory.

Root only. Every name carries PREFIX and this process's id; `sweep` deletes what a previous run left (a
killed run cannot clean up after itself), `close` what this one made, also when it failed halfway.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

PREFIX = "nimmn"
NETNS_ETC = Path("/etc/netns")
SUBNET = "10.231.{run}.{host}"


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30, check=check)


def available() -> str | None:
    """Why two hosts cannot be made here, or None."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None or shutil.which("unshare") is None:
        return "`ip` (iproute2) and `unshare` (util-linux) are needed"
    return None


def sweep() -> list[str]:
    """Delete the namespaces and hosts files of earlier runs (every name with PREFIX); returns their names."""
    listed = _ip("netns", "list", check=False).stdout.split()
    stale = sorted({name for name in listed if name.startswith(PREFIX)})
    if NETNS_ETC.is_dir():
        stale += sorted(p.name for p in NETNS_ETC.iterdir() if p.name.startswith(PREFIX) and p.name not in stale)
    for name in stale:
        # A run that was killed left its ranks running in there: they go first, then the namespace.
        for pid in _ip("netns", "pids", name, check=False).stdout.split():
            try:
                os.kill(int(pid), 9)
            except (ProcessLookupError, ValueError):
                pass
        _ip("netns", "delete", name, check=False)
        shutil.rmtree(NETNS_ETC / name, ignore_errors=True)
    return stale


@dataclass
class Host:
    name: str  # the namespace
    address: str
    hosts_file: Path
    hostname: str = ""  # the pod's name: gloo advertises the address its own host name resolves to

    def command(self, argv: Sequence[str]) -> list[str]:
        """argv run inside this host: its network namespace, its /etc/hosts, its host name (a UTS namespace)
        and a /dev/shm of its own (a mount namespace)."""
        script = 'hostname "$0" && mount -t tmpfs -o mode=1777,size=2g tmpfs /dev/shm && exec "$@"'
        return [
            *("ip", "netns", "exec", self.name, "unshare", "--mount", "--uts", "--"),
            *("sh", "-c", script, self.hostname or self.name, *argv),
        ]

    def add_names(self, names: Mapping[str, str]) -> None:
        """Make names resolvable on this host from now on (appended in place: the mount sees the same file)."""
        with self.hosts_file.open("a") as out:
            out.writelines(f"{address} {name}\n" for name, address in names.items())


@dataclass
class Pair:
    """A leader host and a worker host on one link."""

    run: int = field(default_factory=lambda: os.getpid() % 250 + 1)
    hosts: list[Host] = field(default_factory=list)

    def open(self, hostnames: Sequence[str] = ()) -> Pair:
        """`hostnames`: the leader's and the worker's pod names; each host resolves its own, as a pod does."""
        tag = f"{PREFIX}{os.getpid()}"
        try:
            for index, role in ((1, "l"), (2, "w")):
                name = f"{tag}{role}"
                _ip("netns", "add", name)
                (NETNS_ETC / name).mkdir(parents=True, exist_ok=True)
                hosts_file = NETNS_ETC / name / "hosts"
                address = SUBNET.format(run=self.run, host=index)
                hostname = hostnames[index - 1] if hostnames else name
                hosts_file.write_text(f"127.0.0.1 localhost\n{address} {hostname}\n")
                # No name server: an unknown name fails at once, as a cluster's DNS answers NXDOMAIN (the
                # machine's resolver would be tried, unreachable from here, for seconds per lookup).
                (NETNS_ETC / name / "resolv.conf").write_text("options timeout:1 attempts:1\n")
                self.hosts.append(Host(name, address, hosts_file, hostname))
            leader, worker = self.hosts
            # Interface names: at most 15 characters.
            a, b = f"nm{os.getpid()}a"[:15], f"nm{os.getpid()}b"[:15]
            _ip("link", "add", a, "type", "veth", "peer", "name", b)
            for host, dev in ((leader, a), (worker, b)):
                _ip("link", "set", dev, "netns", host.name)
                _ip("-n", host.name, "addr", "add", f"{host.address}/24", "dev", dev)
                _ip("-n", host.name, "link", "set", dev, "up")
                _ip("-n", host.name, "link", "set", "lo", "up")
                # A default route, as a pod has: vLLM finds its own address by routing towards a public one.
                _ip("-n", host.name, "route", "add", "default", "dev", dev)
        except BaseException:
            self.close()
            raise
        return self

    @property
    def leader(self) -> Host:
        return self.hosts[0]

    @property
    def worker(self) -> Host:
        return self.hosts[1]

    def close(self) -> None:
        for host in self.hosts:
            for pid in _ip("netns", "pids", host.name, check=False).stdout.split():
                try:
                    os.kill(int(pid), 9)
                except (ProcessLookupError, ValueError):
                    pass
            _ip("netns", "delete", host.name, check=False)  # takes its end of the veth pair with it
            shutil.rmtree(NETNS_ETC / host.name, ignore_errors=True)
        self.hosts = []
