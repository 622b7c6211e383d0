"""The NGC registry server of ngc_server.py behind the fault proxy, which serves it over TLS."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from servers.fault_proxy import FaultProxy
from servers.ngc_server import NGCServer, make_certificate

ORG, TEAM = "testorg", "drafts"
API_KEY = "nvapi-loopback-testing-key"


class NGCStore:
    scheme = "ngc"
    gives_digests = False  # NGC file listings carry sizes only

    def start(self) -> "NGCStore":
        self._dir = tempfile.TemporaryDirectory(prefix="ngc-loopback-")
        cert, key = make_certificate(Path(self._dir.name))
        self.cert = str(cert)
        self.server = NGCServer(API_KEY, ORG).start()
        self.proxy = FaultProxy(self.server.url, tls=(str(cert), str(key))).start()
        # requests reads its CA bundle from the process environment; the SDK's calls run in this process too.
        self._saved = os.environ.get("REQUESTS_CA_BUNDLE")
        os.environ["REQUESTS_CA_BUNDLE"] = self.cert
        return self

    def close(self) -> None:
        if self._saved is None:
            os.environ.pop("REQUESTS_CA_BUNDLE", None)
        else:
            os.environ["REQUESTS_CA_BUNDLE"] = self._saved
        self.proxy.close()
        self.server.close()
        self._dir.cleanup()

    def env(self) -> dict[str, str]:
        return {
            "NGC_CLI_API_URL": self.proxy.url,
            "NGC_CLI_AUTH_URL": self.proxy.url,
            "NGC_API_KEY": API_KEY,
            "REQUESTS_CA_BUNDLE": self.cert,
        }

    def publish(self, prefix: str, files: dict[str, bytes]) -> str:
        name = prefix.replace("/", "-")
        self.server.models.add(ORG, TEAM, name, "1.0", files)
        return f"ngc://{ORG}/{TEAM}/{name}:1.0"
