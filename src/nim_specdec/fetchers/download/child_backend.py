"""A backend whose library transfers in a child process (guarded_transfer.py): the child is started before the
listing, so that it imports the library while this process lists."""

from __future__ import annotations

from nim_specdec.fetchers.download.materialize import Job, RemoteFile


class ChildTransferBackend:
    """Subclasses name the modules the child imports (theirs and their library's) and list in `download_with`."""

    child_imports: tuple[str, ...] = ()

    def download(self, job: Job) -> list[RemoteFile]:
        from nim_specdec.fetchers.download.guarded_transfer import TransferChild  # noqa: PLC0415 - pickle and subprocess: ~4 ms of every `plan` that only reads the cache

        with TransferChild(self.child_imports) as child:
            return self.download_with(job, child)

    def download_with(self, job: Job, child) -> list[RemoteFile]:
        """List, keep what job.to_fetch says is still to fetch, and hand the transfer to `child.run`."""
        raise NotImplementedError
