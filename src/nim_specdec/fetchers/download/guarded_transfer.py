"""A library's transfer under the rate guard (fetchers/transfer/rate_guard.py), in a child process that can be killed.

huggingface_hub, google-cloud-storage and ngcsdk count bytes in big reads on worker threads that nothing can
stop from outside, and a store that trickles a byte a second never trips their per-read timeout. So the
transfer runs in a child process: it writes into the attempt's folder as before, the parent feeds the guard with
the bytes on disk there (the libraries' own `.incomplete` files included) and kills the child when the guard
trips. The child dies with the launcher too (PR_SET_PDEATHSIG).

The child is a fresh interpreter (`python -c`, started without a preexec function, so by vfork and exec), never
a fork of the launcher: the launcher has threads running by then (the Hasher's follower and pool, the progress
watch, the libraries' pools), and a lock one of them held at a fork (logging's, the import lock, a connection
pool's, an SSL context's) would be held for ever in a forked child. The transfer is a module-level function
and its arguments plain data (`entry`, `args`), handed over on the child's stdin. The child imports the library
itself, which is what it costs more than a fork; it is started before the listing (`TransferChild`), so that
the imports run beside the listing rather than after it (bench/bench_guarded_child.py has the figures).

The child hands back, over a pipe, each file it finished (for the parent's Hasher) and how it ended: nothing, a
launcher error (already one line), or a library failure as its first line with whether a retry may cure it,
judged by the backend in the child, where the exception is.
"""

from __future__ import annotations

import errno
import importlib
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
from pathlib import Path
from typing import Callable, TypeVar

from nim_specdec.errors import LauncherError, MaterializeError
from nim_specdec.fetchers.download.materialize import Job, RemoteFile, first_line
from nim_specdec.fetchers.transfer.error_map import TransferFailed, disk_full
from nim_specdec.fetchers.transfer.rate_guard import RateGuard
from nim_specdec.processes.child_process import die_with_parent
from nim_specdec.text.redact import redact_text

POLL_S = 0.2
_MAX_REPORT = 64 * 1024
_LENGTH = struct.Struct("!I")  # each message on the pipe: its length, then its pickle


def bytes_under(root: Path, sparse: bool = False) -> int:
    """Every byte under `root`, the libraries' partial files in their bookkeeping folders included.
    `sparse`: the library sizes each file before writing it (ngcsdk truncates to the full size), so the
    blocks written count, not the size."""
    total = 0
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            try:
                st = os.lstat(os.path.join(dirpath, name))
            except OSError:
                continue  # renamed or removed between the listing and the stat
            total += min(st.st_size, st.st_blocks * 512) if sparse else st.st_size
    return total


T = TypeVar("T")
# The child's first statements: sys.path as the parent's (read before anything of ours is unpickled), then
# child_main, which reads the rest from stdin. Nothing here forks the launcher.
_BOOT = (
    "import pickle, sys; sys.path[:] = pickle.load(sys.stdin.buffer); "
    "from nim_specdec.fetchers.download.guarded_transfer import child_main; child_main(sys.stdin.buffer)"
)


class TransferChild:
    """The fresh interpreter one transfer runs in, started before the listing so that it imports `modules`
    (the library, the backend) while the parent lists: what a fork saved is paid beside the listing, not
    after it. `run` hands it the transfer; a child never given one ends when it is closed."""

    def __init__(self, modules: tuple[str, ...]) -> None:
        self._read_fd, write_fd = os.pipe()
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-c", _BOOT], stdin=subprocess.PIPE, pass_fds=(write_fd,), close_fds=True
            )
        except BaseException:
            os.close(self._read_fd)
            raise
        finally:
            os.close(write_fd)
        self._ran = False
        try:  # written whole into the pipe's buffer: the child reads it while it starts
            self._proc.stdin.write(pickle.dumps(list(sys.path)) + pickle.dumps((os.getpid(), write_fd, modules)))
            self._proc.stdin.flush()
        except OSError:
            pass  # the child is gone already: run() reports it ended without a result

    def __enter__(self) -> "TransferChild":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if not self._ran:
            _kill(self._proc)
            os.close(self._read_fd)
            self._ran = True

    def run(
        self,
        job: Job,
        entry: Callable[[T, Callable[[RemoteFile], None]], None],
        args: T,
        is_transient: Callable[[BaseException], bool],
        granularity: int,
        watch: Path | None = None,
        sparse: bool = False,
    ) -> None:
        """Run `entry(args, file_done)` in the child (`file_done(f)` hands a finished file to the parent's
        Hasher); `entry` a module-level function, `args` and `is_transient` picklable. Raises TooSlowError (the
        child killed) when the guard trips, the child's launcher error, an OSError for a full disk, or
        TransferFailed. `granularity`: RateGuard's; `watch`: the folder the library writes (job.dest when None);
        `sparse`: bytes_under's."""
        assert not self._ran, "one transfer per child"
        self._ran = True
        child, read_fd = self._proc, self._read_fd
        watch = job.dest if watch is None else watch
        request = {"entry": entry, "args": args, "is_transient": is_transient, "secrets": job.secrets}
        report, outcome = b"", None
        try:
            try:
                child.stdin.write(pickle.dumps(request))
                child.stdin.close()
            except OSError:
                pass  # the child is gone: it ended without a result
            guard = RateGuard(job.uri, job.settings, granularity=granularity)
            before = bytes_under(watch, sparse)  # files kept from an earlier attempt are not this transfer's bytes
            while True:
                ready, _, _ = select.select([read_fd], [], [], POLL_S)
                if ready:
                    chunk = os.read(read_fd, _MAX_REPORT)
                    if not chunk:
                        break  # the child closed its end: it has ended
                    report += chunk
                    while len(report) >= _LENGTH.size and len(report) >= _LENGTH.size + _LENGTH.unpack_from(report)[0]:
                        end = _LENGTH.size + _LENGTH.unpack_from(report)[0]
                        message, report = pickle.loads(report[_LENGTH.size : end]), report[end:]  # noqa: S301 - ours
                        if message[0] == "done":
                            job.hasher.file_done(message[1])
                        else:
                            outcome = message
                    continue
                guard.check(max(0, bytes_under(watch, sparse) - before))
        except BaseException:  # tripped or interrupted: no transfer may outlive its download directory
            _kill(child)
            raise
        finally:
            os.close(read_fd)
        status = child.wait()
        _raise_outcome(outcome, status)


def child_main(stream) -> None:  # pragma: no cover - runs in the child
    """The child's whole life: tied to the launcher's, its imports, the transfer, its outcome on the pipe, exit."""
    tie = die_with_parent(signal.SIGKILL)
    if tie is not None:
        tie()
    parent, write_fd, modules = pickle.load(stream)
    if os.getppid() != parent:  # the launcher died before the tie was made
        os._exit(1)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a stop ends the child at once; the parent cleans up
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    for module in modules:
        importlib.import_module(module)
    try:
        request = pickle.load(stream)
    except EOFError:  # closed without a transfer (nothing to fetch, or the listing failed)
        os._exit(0)
    outcome: tuple = ("ok",)
    try:
        request["entry"](request["args"], lambda f: _send(write_fd, ("done", f)))
    except LauncherError as err:
        outcome = ("launcher", type(err), err.where, err.problem, err.fix)
    except BaseException as err:  # noqa: BLE001 - handed to the parent as one line
        line = redact_text(first_line(err), request["secrets"])[:2000]
        full = _disk_full(err)
        outcome = ("disk_full", line) if full else ("failed", line, bool(request["is_transient"](err)))
    try:
        try:
            _send(write_fd, outcome)
        except Exception:  # noqa: BLE001 - an error that does not pickle still ends as one line
            _send(write_fd, ("failed", str(outcome[1:])[:2000], False))
    finally:
        os._exit(0)


def _send(fd: int, message: tuple) -> None:  # pragma: no cover - runs in the child
    data = pickle.dumps(message)
    view = memoryview(_LENGTH.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def _disk_full(err: BaseException) -> bool:
    return disk_full(err)


def _raise_outcome(outcome: tuple | None, status: int) -> None:
    if outcome is None:
        raise TransferFailed(f"the transfer process ended without a result (exit status {status})", True)
    if outcome[0] == "ok":
        return
    if outcome[0] == "launcher":
        kind, where, problem, fix = outcome[1:]
        raise (kind if issubclass(kind, MaterializeError) else MaterializeError)(where, problem, fix) from None
    if outcome[0] == "disk_full":
        raise OSError(errno.ENOSPC, outcome[1])
    raise TransferFailed(outcome[1], outcome[2])


def _kill(child: subprocess.Popen) -> None:
    child.kill()
    child.wait()
