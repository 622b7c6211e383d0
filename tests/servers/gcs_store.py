"""A Cloud Storage endpoint on loopback: gcp-storage-emulator, behind the fault proxy."""

from __future__ import annotations

from servers.fault_proxy import FaultProxy

BUCKET = "drafts"


class GCSStore:
    scheme = "gs"
    gives_digests = True  # the listing carries an MD5 or SHA-256 per file

    def __init__(self) -> None:
        from gcp_storage_emulator.server import create_server

        self._server = create_server("127.0.0.1", 0, in_memory=True, default_bucket=BUCKET)

    def start(self) -> "GCSStore":
        self._server.start()
        host, port = self._server._api._httpd.server_address[:2]  # the emulator has no accessor for a port-0 bind
        self.direct_url = f"http://{host}:{port}"
        self.proxy = FaultProxy(self.direct_url).start()
        return self

    def close(self) -> None:
        self.proxy.close()
        self._server.stop()

    def _client(self):
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import storage

        return storage.Client(
            project="test", credentials=AnonymousCredentials(), client_options={"api_endpoint": self.direct_url}
        )

    def env(self) -> dict[str, str]:
        # The emulator needs no credential; the token stands for one, to check that none is ever printed.
        return {"STORAGE_EMULATOR_HOST": self.proxy.url, "GOOGLE_OAUTH_ACCESS_TOKEN": "ya29.testing-token-value"}

    def publish(self, prefix: str, files: dict[str, bytes]) -> str:
        bucket = self._client().bucket(BUCKET)
        for name, data in files.items():
            bucket.blob(f"{prefix}/{name}").upload_from_string(data)
        return f"gs://{BUCKET}/{prefix}"
