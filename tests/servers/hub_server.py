"""A loopback server speaking the part of the Hugging Face Hub protocol that snapshot_download uses.

No package serves a Hub from local files (mirrors such as olah proxy the real Hub), so this is a
small fixture written from the client's requests:

    GET  /api/models/ORG/NAME/revision/REV          repo info: {"id", "sha", "siblings"}
    GET  /api/models/ORG/NAME/tree/REV?recursive=1  file list: type, path, size, oid (git blob sha1), lfs
    HEAD /ORG/NAME/resolve/REV/PATH                 X-Repo-Commit, ETag (X-Linked-Etag for LFS), sizes
    GET  /ORG/NAME/resolve/REV/PATH                 the bytes, honouring Range (the client resumes with it)

A missing repo or file answers 404 with X-Error-Code (RepoNotFound / EntryNotFound) as the Hub
does. With a token set, requests without `Authorization: Bearer TOKEN` get 401.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler
from urllib.parse import unquote, urlsplit

from servers.fault_proxy import QuietServer

_API = re.compile(r"^/api/models/([^/]+/[^/]+)/(revision|tree)/([^/?]+)(?:/(.*))?$")
_RESOLVE = re.compile(r"^/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$")
_LFS_MIN = 1024  # files at least this big are served as LFS files, as the Hub does for weights


class HubRepos:
    def __init__(self) -> None:
        self.repos: dict[str, tuple[str, dict[str, bytes]]] = {}  # repo -> (commit sha, files)
        self.token: str | None = None
        self.lock = threading.Lock()

    def add(self, repo: str, files: dict[str, bytes], sha: str | None = None) -> str:
        """`sha`: the commit id to serve the files as (a built-in's pinned commit); else one made from them."""
        sha = (
            sha
            or hashlib.sha1(
                repr(sorted((k, hashlib.sha1(v).hexdigest()) for k, v in files.items())).encode()
            ).hexdigest()
        )
        with self.lock:
            self.repos[repo] = (sha, dict(files))
        return sha

    def find(self, repo: str, rev: str) -> tuple[str, dict[str, bytes]] | None:
        with self.lock:
            found = self.repos.get(repo)
        if found and rev in ("main", found[0]):
            return found
        return None


def _git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()


def tree_entry(path: str, data: bytes) -> dict:
    return json.loads(_tree_entry_json(path, data))


@functools.lru_cache(maxsize=256)
def _tree_entry_json(path: str, data: bytes) -> str:
    """Computed once per file (as the Hub stores its ids): hashing the bytes at every listing and every
    HEAD would make this server, not the client under test, the slow part of a benchmark."""
    entry = {"type": "file", "oid": _git_blob_sha1(data), "size": len(data), "path": path}
    if len(data) >= _LFS_MIN:
        entry["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
    return json.dumps(entry)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    repos: HubRepos

    def log_message(self, *args) -> None:
        pass

    def _send(self, status: int, body: bytes = b"", headers: dict | None = None, head: bool = False) -> None:
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _json(self, obj) -> None:
        self._send(200, json.dumps(obj).encode(), {"Content-Type": "application/json"})

    def _error(self, status: int, code: str, head: bool = False) -> None:
        body = json.dumps({"error": code}).encode()
        self._send(
            status, body, {"X-Error-Code": code, "X-Error-Message": code, "Content-Type": "application/json"}, head
        )

    def _authorized(self) -> bool:
        token = self.repos.token
        return token is None or self.headers.get("Authorization") == f"Bearer {token}"

    def do_GET(self) -> None:
        self._dispatch(head=False)

    def do_HEAD(self) -> None:
        self._dispatch(head=True)

    def _dispatch(self, head: bool) -> None:
        path = unquote(urlsplit(self.path).path)
        if not self._authorized():
            return self._error(401, "Unauthorized", head)
        api = _API.match(path)
        if api:
            repo, kind, rev, _ = api.groups()
            found = self.repos.find(repo, rev)
            if found is None:
                return self._error(404, "RepoNotFound" if repo not in self.repos.repos else "RevisionNotFound", head)
            sha, files = found
            if kind == "revision":
                return self._json(
                    {
                        "id": repo,
                        "modelId": repo,
                        "sha": sha,
                        "private": False,
                        "siblings": [{"rfilename": p} for p in sorted(files)],
                    }
                )
            return self._json([tree_entry(p, files[p]) for p in sorted(files)])
        resolve = _RESOLVE.match(path)
        if resolve:
            repo, rev, fpath = resolve.groups()
            found = self.repos.find(repo, rev)
            if found is None:
                return self._error(404, "RepoNotFound", head)
            sha, files = found
            if fpath not in files:
                return self._error(404, "EntryNotFound", head)
            return self._file(sha, fpath, files[fpath], head)
        self._error(404, "NotFound", head)

    def _file(self, sha: str, fpath: str, data: bytes, head: bool) -> None:
        entry = tree_entry(fpath, data)
        headers = {
            "X-Repo-Commit": sha,
            "ETag": f'"{entry["oid"]}"',
            "Accept-Ranges": "bytes",
            "Content-Type": "application/octet-stream",
        }
        if "lfs" in entry:
            headers["X-Linked-Etag"] = f'"{entry["lfs"]["oid"]}"'
            headers["X-Linked-Size"] = str(len(data))
        status, body = 200, data
        ranged = re.match(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        if ranged:
            start = int(ranged.group(1))
            end = int(ranged.group(2)) if ranged.group(2) else len(data) - 1
            status, body = 206, data[start : end + 1]
            headers["Content-Range"] = f"bytes {start}-{start + len(body) - 1}/{len(data)}"
        self._send(status, body, headers, head)


class HubServer:
    def __init__(self) -> None:
        self.repos = HubRepos()
        handler = type("Handler", (_Handler,), {"repos": self.repos})
        self._server = QuietServer(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> "HubServer":
        self._thread.start()
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
