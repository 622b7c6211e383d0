"""`nim-specdec demo-model DIR`: write the tiny offline demo model (target and drafts) under DIR."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from nim_specdec.errors import ConfigError
from nim_specdec_lab.demo_model import LEARNABLE_PART, make_demo_model, make_learnable_model


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "dir", metavar="DIR", help="directory to write target/, draft-copy/, draft-other/, draft-eagle3/ into"
    )
    parser.add_argument(
        "--learnable",
        action="store_true",
        help=f"write only {LEARNABLE_PART}/: a 4-layer target whose sampled outputs a trained EAGLE3 draft can "
        "predict and prompt lookup cannot (for `draft train`)",
    )
    parser.add_argument("--json", action="store_true", help="print which parts were written, as JSON")


def run(args: argparse.Namespace) -> int:
    root = Path(args.dir).absolute()
    if root.exists() and not root.is_dir():
        raise ConfigError(str(root), "exists and is not a directory", "choose another DIR")
    try:
        written = make_learnable_model(root) if args.learnable else make_demo_model(root)
    except ImportError as err:
        # torch, safetensors, tokenizers and transformers come with vLLM.
        raise ConfigError(
            "demo-model", f"{err.name} is not installed", "pip install 'nim-specdec[cpu]' (or '[gpu]')"
        ) from None
    except OSError as err:
        raise ConfigError(
            str(root), f"cannot write the demo model ({err.strerror or err})", "choose a writable DIR"
        ) from None
    if args.json:
        print(json.dumps({"dir": str(root), "written": written}, sort_keys=True, allow_nan=False))
    else:
        made = [name for name, new in written.items() if new]
        state = f"wrote {', '.join(made)}" if made else "already complete"
        served = root / (LEARNABLE_PART if args.learnable else "target")
        print(f"demo model in {root}: {state}; serve {served}")
    return 0
