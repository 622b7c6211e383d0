"""The queue is written out when the server process exits on SIGTERM, even without an ASGI lifespan shutdown.

vLLM's SIGTERM handling cancels the HTTP server task (which can skip the lifespan shutdown) and then
lets the interpreter exit normally; the middleware's atexit hook must flush what is still queued.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from capture_harness import read_lines

SERVER_PROCESS = """
import json, os, signal, sys
from nim_specdec.capture.middleware import CaptureMiddleware

async def app(scope, receive, send):
    pass

def on_sigterm(signum, frame):
    raise SystemExit(0)  # what a server's handler does: unwind and exit normally

signal.signal(signal.SIGTERM, on_sigterm)
mw = CaptureMiddleware(app)  # configured from NIM_CAPTURE_* like inside vLLM
body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x" * 2000}]}).encode()
for i in range(COUNT):
    assert mw.writer.submit(float(i), body)
print(len(open(sys.argv[1], "rb").read().splitlines()), flush=True)  # lines written before SIGTERM
os.kill(os.getpid(), signal.SIGTERM)
"""


def test_sigterm_flushes_the_queue(tmp_path):
    path = tmp_path / "c.jsonl"
    count = 4000  # the queue's size: all accepted, far more than the writer handles before the signal
    env = {
        **os.environ,
        "NIM_CAPTURE_ENABLE": "1",
        "NIM_CAPTURE_ARGS": json.dumps({"path": str(path), "format": "mooncake_payload"}),
    }
    done = subprocess.run(
        [sys.executable, "-c", SERVER_PROCESS.replace("COUNT", str(count)), str(path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.strip()) < count  # the records were still queued when the signal came
    lines = read_lines(path)
    assert [line["timestamp"] for line in lines] == list(range(count))
