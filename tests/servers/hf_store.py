"""The Hub-protocol server of hub_server.py behind the fault proxy, reached through HF_ENDPOINT."""

from __future__ import annotations

from servers.fault_proxy import FaultProxy
from servers.hub_server import HubServer

ORG = "test-org"
TOKEN = "hf_testing_token_value"


class HFStore:
    scheme = "hf"
    gives_digests = True  # the listing carries an MD5 or SHA-256 per file

    def start(self) -> "HFStore":
        self.hub = HubServer().start()
        self.hub.repos.token = TOKEN
        self.proxy = FaultProxy(self.hub.url).start()
        return self

    def close(self) -> None:
        self.proxy.close()
        self.hub.close()

    def env(self) -> dict[str, str]:
        return {"HF_ENDPOINT": self.proxy.url, "HF_TOKEN": TOKEN}

    def publish(self, prefix: str, files: dict[str, bytes]) -> str:
        repo = f"{ORG}/{prefix.replace('/', '-')}"
        self.hub.repos.add(repo, files)
        return f"hf://{repo}"
