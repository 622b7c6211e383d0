"""Messages that name the cause: a read-only file system, object names a file system cannot hold (a name
clash, a name over the file-name limit), a store that redirects to another host."""

from __future__ import annotations

import os
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from nim_specdec.config.sources import parse_source
from nim_specdec.errors import EXIT_MATERIALIZE, MaterializeError
from nim_specdec.fetchers.registry import get_fetcher
from nim_specdec.fetchers.transfer.safety import check_clashes, target_path
from nim_specdec.files.writable import read_only_folder, unwritable_reason
from servers.harness import context_for
from servers.s3_store import S3Store


def _read_only_mounts() -> list[str]:
    """Folders on a file system this machine mounts read-only, found at run time."""
    found = []
    with open("/proc/self/mounts") as mounts:
        for line in mounts:
            fields = line.split()
            if len(fields) > 3 and "ro" in fields[3].split(",") and os.path.isdir(fields[1]):
                if os.statvfs(fields[1]).f_flag & os.ST_RDONLY:
                    found.append(fields[1])
    return found[:1]


def test_a_read_only_folder_is_named_read_only_and_the_fix_is_a_read_write_mount():
    problem, fix = read_only_folder("/opt/nim/.cache")
    assert "read-only file system" in problem and "chmod" not in fix and "read-write" in fix


@pytest.mark.parametrize("mount", _read_only_mounts())
def test_a_cache_on_a_real_read_only_mount_is_reported_as_read_only(mount):
    problem, fix = unwritable_reason(Path(mount) / "cache")
    assert "read-only file system" in problem and "chmod" not in fix


def test_a_name_over_the_file_name_limit_is_one_line_naming_the_limit(tmp_path):
    with pytest.raises(MaterializeError) as err:
        target_path("s3://b/m", tmp_path, "weights/" + "w" * 300 + ".safetensors")
    assert "255 bytes" in err.value.one_line() and err.value.exit_code == EXIT_MATERIALIZE


def test_a_path_over_path_max_is_one_line(tmp_path):
    with pytest.raises(MaterializeError, match="4096 bytes"):
        target_path("s3://b/m", tmp_path, "/".join(["d" * 200] * 21))


def test_a_file_and_a_folder_of_the_same_name_clash():
    with pytest.raises(MaterializeError, match="would be both a file and a folder"):
        check_clashes("s3://b/m", ["config.json", "a", "a/b/c.bin"])
    check_clashes("s3://b/m", ["a/x", "a/b/c.bin", "ab"])


@pytest.fixture(scope="module")
def s3():
    store = S3Store().start()
    yield store
    store.close()


@pytest.mark.parametrize("client", ["auto", "0"])
@pytest.mark.parametrize(
    "files,fragment",
    [
        ({"config.json": b"{}", "w": b"x", "w/part.bin": b"y"}, "would be both a file and a folder"),
        ({"config.json": b"{}", "n" * 300: b"x"}, "longer than 255 bytes"),
    ],
)
def test_an_s3_listing_a_file_system_cannot_hold_is_one_line_not_a_network_error(s3, tmp_path, client, files, fragment):
    uri = s3.publish(f"clash{uuid.uuid4().hex[:8]}", files)
    env = {**s3.env(), "NIM_S5CMD": client, "NIM_DOWNLOAD_RETRIES": "0"}
    with pytest.raises(MaterializeError) as err:
        get_fetcher("s3").fetch(parse_source(uri, "X"), context_for(env, tmp_path))
    line = err.value.one_line()
    assert fragment in line and "reachable" not in line, line


class _Redirecting(BaseHTTPRequestHandler):
    """An S3 endpoint whose bucket lives elsewhere: every answer is a redirect of the class's `kind`."""

    protocol_version = "HTTP/1.1"
    kind = "permanent"

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        body = b""
        if self.kind == "permanent":  # S3's own answer, with the region and the endpoint
            body = (
                b'<?xml version="1.0"?><Error><Code>PermanentRedirect</Code><Message>use the specified endpoint'
                b"</Message><Endpoint>bucket.s3.other-host.invalid</Endpoint><Bucket>bucket</Bucket></Error>"
            )
            self.send_response(301)
            self.send_header("x-amz-bucket-region", "eu-west-1")
        elif self.kind == "temporary":  # a plain HTTP redirect naming no region
            self.send_response(307)
        else:  # a loop back to the same path
            self.send_response(302)
        host = "127.0.0.1:9" if self.kind == "loop" else "other-host.invalid:9"
        self.send_header("Location", f"http://{host}/bucket{self.path}&X-Amz-Signature=secret-signature")
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_HEAD = do_GET


@pytest.mark.parametrize(
    "kind,named", [("permanent", "other-host.invalid"), ("temporary", "other-host.invalid"), ("loop", "127.0.0.1:9")]
)
def test_a_redirect_to_another_host_is_one_line_naming_it(tmp_path, kind, named):
    """botocore's region redirector asks the bucket's region with a HEAD that is redirected again: without a
    bound at the root, a redirect that names no region ended in a RecursionError."""
    handler = type("Handler", (_Redirecting,), {"kind": kind})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {
        "AWS_ENDPOINT_URL_S3": f"http://127.0.0.1:{server.server_port}",
        "AWS_ACCESS_KEY_ID": "a",
        "AWS_SECRET_ACCESS_KEY": "b",
        "NIM_DOWNLOAD_RETRIES": "0",
        "NIM_S5CMD": "0",
    }
    try:
        with pytest.raises(MaterializeError) as err:
            get_fetcher("s3").fetch(parse_source("s3://bucket/model", "X"), context_for(env, tmp_path))
    finally:
        server.shutdown()
    line = err.value.one_line()
    assert "redirected" in line and named in line and "reachable" not in line, line
    assert "Recursion" not in line and "secret-signature" not in line, line
