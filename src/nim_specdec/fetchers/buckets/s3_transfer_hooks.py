"""The hooks the s3:// download hands boto3's transfer manager: what each file's future is told (size, ETag,
progress, digests) and the response bodies a stopped download shuts."""

from __future__ import annotations

from nim_specdec.fetchers.download.materialize import Job, RemoteFile


class TransferSubscriber:
    """Gives the transfer manager the listed size and ETag (no HEAD per file; the ETag also becomes
    If-Match on every ranged GET, so an object replaced mid-download fails instead of mixing) and
    counts bytes for progress."""

    def __init__(self, remote: RemoteFile, etag: str, job: Job) -> None:
        self.remote, self.size, self.etag, self.progress, self.hasher = (
            remote,
            remote.size,
            etag,
            job.progress,
            job.hasher,
        )

    def on_queued(self, future, **kwargs):
        future.meta.provide_transfer_size(self.size)
        if self.etag:
            future.meta.provide_object_etag(self.etag)

    def on_progress(self, future, bytes_transferred, **kwargs):
        self.progress.add(bytes_transferred)

    def on_done(self, future, **kwargs):
        try:
            future.result()
        except Exception:  # noqa: BLE001 - the failure is raised where the futures are awaited
            return
        self.hasher.file_done(self.remote)


class OpenBodies:
    """The response bodies of the client's GETs, so that a stopped download can shut their sockets and
    unblock the threads reading them (urllib3's HTTPResponse.shutdown)."""

    def __init__(self, client) -> None:
        self._bodies: list = []
        self._stopped = False
        client.meta.events.register("after-call.s3.GetObject", self._keep)

    def _keep(self, http_response=None, parsed=None, **_kwargs) -> None:
        body = (parsed or {}).get("Body")
        raw = getattr(body, "_raw_stream", None)
        if raw is None:
            return
        self._bodies.append(raw)
        if self._stopped:  # s3transfer retries a failed read with a new GET: it must not trickle either
            self._shut(raw)

    def shut_all(self) -> None:
        self._stopped = True
        for raw in list(self._bodies):
            self._shut(raw)

    @staticmethod
    def _shut(raw) -> None:
        try:
            raw.shutdown()
        except Exception:  # noqa: BLE001 - already closed or finished: nothing left to unblock
            pass
