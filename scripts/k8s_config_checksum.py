"""Write each pod template's `checksum/<ConfigMap>` annotation from the ConfigMap of that name in the same file.

python scripts/k8s_config_checksum.py [FILE...]          rewrite the annotations (default: deploy/k8s/**/*.yaml)
python scripts/k8s_config_checksum.py --check [FILE...]  exit 1 naming each annotation that is out of date

Kubernetes rolls a Deployment's (or a LeaderWorkerSet's) pods when their pod template changes, not when a
ConfigMap they read changes. The annotation carries the ConfigMap's digest, so that editing the ConfigMap and
running this script changes the pod template too, and `kubectl apply` rolls the pods onto the new values (no
kustomize or Helm needed). Only the annotation's value is rewritten: comments and layout stay as they are.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

import yaml

K8S_DIR = Path(__file__).resolve().parent.parent / "deploy" / "k8s"
PREFIX = "checksum/"
LINE = re.compile(r"^(?P<head>\s*checksum/(?P<name>[a-z0-9.-]+):\s*)(?P<value>\S*)\s*$", re.MULTILINE)


def digest(data: dict) -> str:
    """sha256 of the ConfigMap's data as canonical JSON: key order and YAML quoting do not change it."""
    return hashlib.sha256(json.dumps(data or {}, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def config_maps(text: str) -> dict[str, str]:
    """Each ConfigMap's name in the file and the digest of its data."""
    found = {}
    for doc in yaml.safe_load_all(text):
        if isinstance(doc, dict) and doc.get("kind") == "ConfigMap":
            found[doc["metadata"]["name"]] = digest(doc.get("data") or {})
    return found


def rewritten(text: str, where: str) -> tuple[str, list[str]]:
    """The file with every checksum annotation set, and what was out of date. A checksum naming no ConfigMap of
    the file is an error (ValueError): the annotation would then hold a digest of nothing."""
    digests = config_maps(text)
    stale: list[str] = []

    def one(match: re.Match[str]) -> str:
        name = match["name"]
        if name not in digests:
            raise ValueError(f"{where}: {PREFIX}{name} names no ConfigMap in this file")
        value = f'"{digests[name]}"'  # quoted: a digest of digits and one "e" would read as a number
        if match["value"] != value:
            stale.append(f"{where}: {PREFIX}{name}")
        return f"{match['head']}{value}"

    return LINE.sub(one, text), stale


def main(argv: list[str]) -> int:
    check = "--check" in argv
    files = [Path(a) for a in argv if a != "--check"] or sorted(K8S_DIR.rglob("*.yaml"))
    out_of_date = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        try:
            new, stale = rewritten(text, path.name)
        except ValueError as err:
            print(f"k8s_config_checksum: {err}", file=sys.stderr)
            return 2
        out_of_date += stale
        if stale and not check:
            path.write_text(new, encoding="utf-8")
    if check and out_of_date:
        print(f"out of date (run {Path(__file__).name}): {', '.join(out_of_date)}", file=sys.stderr)
        return 1
    for item in out_of_date:
        print(f"updated {item}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
