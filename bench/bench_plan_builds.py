"""How many times `build_plan` runs for one command: `plan`, and `prepare` of local sources (the demo model's
target with a local draft, and with n-gram), and `prepare` of a remote target (S3 on loopback, empty cache).
Each command runs in a process of its own with build_plan wrapped by a counter, and plan_front (the first
half of build_plan, which names the sources) where the code has it; the counts are printed.

    python bench/bench_plan_builds.py [--no-remote]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
NGRAM = '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 1}'
DRAFT = '{"method": "draft_model", "model": "copy_draft", "num_speculative_tokens": 3}'

# The child: wrap every module's reference to build_plan, run the CLI, write the count on the descriptor given.
# plan_front (the part that names the sources) is counted too where it exists.
_CHILD = """
import os, sys
from nim_specdec.cli.main import main
import nim_specdec.launch.pipeline  # the modules that call them, imported before they are patched

counts = {"build_plan": 0, "plan_front": 0}

def counter(name, original):
    def counted(*args, **kwargs):
        counts[name] += 1
        return original(*args, **kwargs)
    return counted

for name in counts:
    original = getattr(sys.modules.get("nim_specdec.plan.plan_front"), name, None) or getattr(
        sys.modules["nim_specdec.plan.build"], name, None)
    if original is None:
        continue
    wrapped = counter(name, original)
    for module_name, module in list(sys.modules.items()):
        if module_name.startswith("nim_specdec") and getattr(module, name, None) is original:
            setattr(module, name, wrapped)
code = main(sys.argv[1:])
os.write(int(os.environ["BUILD_COUNT_FD"]), f"{counts['build_plan']} {counts['plan_front']} {code}".encode())
"""


def _count(args: list[str], env: dict[str, str]) -> tuple[int, int, int]:
    read, write = os.pipe()
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD, *args],
        env={**env, "PYTHONPATH": str(SRC), "BUILD_COUNT_FD": str(write)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        pass_fds=(write,),
        text=True,
    )
    os.close(write)
    _, err = proc.communicate(timeout=900)
    with os.fdopen(read) as pipe:
        out = pipe.read()
    if not out:
        sys.exit(f"{args[0]} failed: {err[-2000:]}")
    builds, fronts, code = out.split()
    return int(builds), int(fronts), int(code)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-remote", action="store_true", help="skip the S3 case")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        subprocess.run(
            [sys.executable, "-m", "nim_specdec", "demo-model", str(root / "demo")],
            env={**os.environ, "PYTHONPATH": str(SRC)},
            check=True,
            stdout=subprocess.DEVNULL,
        )
        base = {
            **os.environ,
            "NIM_CACHE_PATH": str(root / "cache"),
            "HF_HUB_OFFLINE": "1",
            "VLLM_CPU_KVCACHE_SPACE": "1",
        }
        local = {**base, "NIM_MODEL_PATH": str(root / "demo" / "target")}
        with_draft = {**local, "NIM_DRAFT_MODEL_PATH": str(root / "demo" / "draft-copy")}
        cases = [
            ("plan, local target, n-gram", ["plan", "--speculative-config", NGRAM], local),
            ("plan, local target and draft", ["plan", "--speculative-config", DRAFT], with_draft),
            ("prepare, local target, n-gram", ["prepare", "--speculative-config", NGRAM], local),
            ("prepare, local target and draft", ["prepare", "--speculative-config", DRAFT], with_draft),
        ]
        store = None
        if not args.no_remote:
            sys.path.insert(0, str(SRC.parent / "tests"))
            from servers.harness import TINY_LLAMA_CONFIG, cli_env, model_files  # noqa: PLC0415
            from servers.s3_store import S3Store  # noqa: PLC0415

            store = S3Store().start()
            files = {**model_files(64 * 1024), "config.json": json.dumps(TINY_LLAMA_CONFIG).encode()}
            uri = store.publish(f"t{uuid.uuid4().hex[:8]}", files)
            remote = cli_env(store, root / "remote-cache", NIM_MODEL_PATH=uri, NIM_SPECDEC_PREFLIGHT="off")
            remote = {**remote, "HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1"}
            cases.append(
                ("prepare, S3 target, empty cache, n-gram", ["prepare", "--speculative-config", NGRAM], remote)
            )
        try:
            print(f"{'command':44} {'build_plan runs':>15} {'plan_front runs':>15} {'exit':>5}")
            for name, argv, env in cases:
                builds, fronts, code = _count(argv, env)
                print(f"{name:44} {builds:15d} {fronts:15d} {code:5d}")
        finally:
            if store is not None:
                store.close()


if __name__ == "__main__":
    main()
