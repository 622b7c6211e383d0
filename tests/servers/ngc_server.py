"""A loopback HTTPS server answering the NGC registry endpoints that ngcsdk calls for a model download.

ngcsdk reads its base URL from NGC_CLI_API_URL (and the token service's from NGC_CLI_AUTH_URL) and
forces https://, so the client reaches this plain-HTTP server through the fault proxy serving TLS
with a certificate made at start (make_certificate); the client trusts it through
REQUESTS_CA_BUNDLE. Download URLs are built from the Host header, so they too go through the
proxy. Routes, as the SDK calls them for
`registry.model.download_version("ORG/[TEAM/]NAME:VERSION")`:

    POST /v3/keys/get-caller-info                     scoped API key (nvapi-...) -> its org; such a key is
                                                      then sent as the bearer token itself
    GET  /token?service=ngc&scope=...                 legacy key (Basic $oauthtoken:KEY) -> bearer token
    GET  /v2/org/O[/team/T]/models/N                  model, with its latest version
    GET  /v2/org/O[/team/T]/models/N/versions/V       version status UPLOAD_COMPLETE
    GET  /v2/org/O[/team/T]/models/N/versions/V/files file list (path, sizeInBytes), one page
    GET  /v2/org/O[/team/T]/models/N/V/files          download URLs: {"filepath": [...], "urls": [...]}
    GET  /blob/<id>/<path>                            file bytes, honouring Range (the SDK downloads ranges)

What this covers: our ngc:// fetcher through the real SDK code (auth, listing, URL listing, ranged
download into NAME_vVERSION). Not covered: NGC's real authorization rules, guest access, and
object-store redirects, which the SDK follows to hosts other than the API.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import json
import re
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from servers.fault_proxy import QuietServer

_MODEL = re.compile(r"^/v2/org/([^/]+)/(?:team/([^/]+)/)?models/([^/]+)(?:/versions/([^/]+)(/files)?)?$")
_URLS = re.compile(r"^/v2/org/([^/]+)/(?:team/([^/]+)/)?models/([^/]+)/([^/]+)/files$")


def make_certificate(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1, made with `cryptography` (no openssl binary needed)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


class NGCModels:
    def __init__(self, api_key: str, org: str) -> None:
        self.api_key, self.org = api_key, org
        self.models: dict[tuple[str, str | None, str, str], dict[str, bytes]] = {}
        self.blobs: dict[str, bytes] = {}  # blob id -> bytes, what the "pre-signed" URLs point at
        self.blob_ids: dict[tuple, dict[str, str]] = {}  # model key -> path -> blob id
        self.requests: list[tuple[str, str, int]] = []  # (method, path, status), for the tests to count
        self.lock = threading.Lock()

    def add(self, org: str, team: str | None, name: str, version: str, files: dict[str, bytes]) -> None:
        key = (org, team, name, version)
        with self.lock:
            self.models[key] = dict(files)
            self.blob_ids[key] = {}
            for path, data in files.items():
                blob_id = f"b{len(self.blobs)}"
                self.blobs[blob_id] = data
                self.blob_ids[key][path] = blob_id


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    models: NGCModels

    def log_message(self, *args) -> None:
        pass

    def _send(self, status: int, body: bytes, headers: dict | None = None) -> None:
        with self.models.lock:
            self.models.requests.append((self.command, self.path, status))
        self.send_response(status)
        for k, v in (headers or {"Content-Type": "application/json"}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, obj, status: int = 200) -> None:
        self._send(status, json.dumps(obj).encode())

    def _not_found(self) -> None:
        self._json({"requestStatus": {"statusCode": "NOT_FOUND", "statusDescription": "not found"}}, 404)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        form = parse_qs(self.rfile.read(length).decode()) if length else {}
        if urlsplit(self.path).path == "/v3/keys/get-caller-info":
            if form.get("credentials", [""])[0] != self.models.api_key:
                return self._json({"requestStatus": {"statusCode": "UNAUTHORIZED"}}, 401)
            return self._json({"type": "SERVICE_KEY", "orgName": self.models.org, "products": []})
        self._not_found()

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        path = unquote(parts.path)
        if path == "/token":
            expected = base64.b64encode(f"$oauthtoken:{self.models.api_key}".encode()).decode()
            if self.headers.get("Authorization") != f"Basic {expected}":
                return self._json({"requestStatus": {"statusCode": "UNAUTHORIZED"}}, 401)
            return self._json({"token": "loopback-bearer-token", "expires_in": 3600})
        if path.startswith("/blob/"):
            return self._blob(path[len("/blob/") :].split("/", 1)[0])
        # Scoped keys (nvapi-...) travel as the bearer token itself; legacy keys are exchanged at /token.
        if self.headers.get("Authorization") not in ("Bearer loopback-bearer-token", f"Bearer {self.models.api_key}"):
            return self._json({"requestStatus": {"statusCode": "UNAUTHORIZED"}}, 401)
        urls = _URLS.match(path)
        if urls:
            return self._download_urls(*urls.groups())
        model = _MODEL.match(path)
        if model:
            return self._model(*model.groups())
        self._not_found()

    def _find(self, org, team, name, version=None):
        with self.models.lock:
            return {
                k: v for k, v in self.models.models.items() if k[:3] == (org, team, name) and version in (None, k[3])
            }

    def _model(self, org, team, name, version, files_suffix) -> None:
        found = self._find(org, team, name, version)
        if not found:
            return self._not_found()
        if version is None:
            latest = sorted(k[3] for k in found)[-1]
            return self._json({"model": {"name": name, "orgName": org, "teamName": team, "latestVersionIdStr": latest}})
        files = next(iter(found.values()))
        if files_suffix is None:
            return self._json(
                {
                    "modelVersion": {
                        "versionId": version,
                        "status": "UPLOAD_COMPLETE",
                        "totalFileCount": len(files),
                        "totalSizeInBytes": sum(map(len, files.values())),
                    }
                }
            )
        listing = [{"path": p, "sizeInBytes": len(d)} for p, d in sorted(files.items())]
        self._json(
            {
                "modelFiles": listing,
                "paginationInfo": {"index": 0, "size": 1000, "totalPages": 1, "totalResults": len(listing)},
            }
        )

    def _download_urls(self, org, team, name, version) -> None:
        found = self._find(org, team, name, version)
        if not found:
            return self._not_found()
        ((key, files),) = found.items()
        host = f"https://{self.headers['Host']}"
        with self.models.lock:
            urls = {
                path: f"{host}/blob/{blob_id}/{path}" for path, blob_id in sorted(self.models.blob_ids[key].items())
            }
        self._json(
            {
                "filepath": list(urls),
                "urls": list(urls.values()),
                "paginationInfo": {"index": 0, "size": 1000, "totalPages": 1, "totalResults": len(urls)},
            }
        )

    def _blob(self, blob_id: str) -> None:
        with self.models.lock:
            data = self.models.blobs.get(blob_id)
        if data is None:
            return self._send(404, b"<Error><Code>NoSuchKey</Code></Error>", {"Content-Type": "application/xml"})
        ranged = re.match(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        if ranged:
            start = int(ranged.group(1))
            end = int(ranged.group(2)) if ranged.group(2) else len(data) - 1
            body = data[start : end + 1]
            return self._send(
                206,
                body,
                {
                    "Content-Type": "application/octet-stream",
                    "Content-Range": f"bytes {start}-{start + len(body) - 1}/{len(data)}",
                },
            )
        self._send(200, data, {"Content-Type": "application/octet-stream"})


class NGCServer:
    def __init__(self, api_key: str, org: str) -> None:
        self.models = NGCModels(api_key, org)
        handler = type("Handler", (_Handler,), {"models": self.models})
        self._server = QuietServer(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> "NGCServer":
        self._thread.start()
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
