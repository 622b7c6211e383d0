"""hf:// transfers go over HTTP, never through hf_xet: the rate guard and the write follower watch the files
huggingface_hub's HTTP path writes, and no loopback server serves Xet (fetchers/hub/hf.py, http_only)."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json
from huggingface_hub import constants
from huggingface_hub.utils._runtime import is_xet_available
from nim_specdec.fetchers.hub.hf import http_only
before = is_xet_available()
http_only(constants)
print(json.dumps({"before": before, "after": is_xet_available()}))
"""


def test_the_transfer_interpreter_switches_hf_xet_off():
    # A fresh interpreter, as the transfer child is: the switch is a module constant of huggingface_hub.
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, check=True)
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    # hf_xet is installed beside huggingface_hub here, so without the switch snapshot_download would use it.
    assert seen == {"before": True, "after": False}
