"""The child program run with SGLang's interpreter: SGLang 0.5's own argument resolution over argvs, as JSON.

    $SGLANG_PYTHON resolver_child.py < argvs.json > resolutions.json

stdin: a JSON list of argvs (each a list of strings, as `sglang.launch_server` takes them). stdout: one JSON list,
an entry per argv: {"ok": true, "served": {field: value, ...}, "changed_by": {field: handler, ...}} with the
speculative values SGLang would serve after `prepare_server_args(argv)` and `.resolve_once()`, or
{"ok": false, "refusal": "<one line>"} where its parser or resolver refuses the argv. The imports are paid once for
all the argvs (seconds); each resolution takes a fraction of a second.

Standard library and SGLang only: it runs in SGLang's virtualenv, never imports the launcher, and is run by path.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import sys

# The values a plan shows and compares: what SGLang serves for speculative decoding.
SERVED_FIELDS = (
    "speculative_algorithm",
    "speculative_draft_model_path",
    "speculative_num_steps",
    "speculative_eagle_topk",
    "speculative_num_draft_tokens",
    "speculative_dflash_block_size",
    "speculative_dspark_block_size",
    "speculative_adaptive",
    "speculative_ngram_min_bfs_breadth",
    "speculative_ngram_max_bfs_breadth",
    "speculative_draft_model_quantization",
    "speculative_draft_model_revision",
    "max_running_requests",
    "device",
)


def declare_torchvision_ops() -> None:
    """Lets torchvision's Python part import beside a CPU torch.

    SGLang's model configs import torchvision.transforms; the package index has torchvision only as CUDA builds,
    whose C++ operators do not load with the CPU torch, and torchvision then fails at import on the two operators
    it registers fake kernels for unconditionally. Declaring those two schemas lets it import; no torchvision
    operator runs during argument resolution.
    """
    import torch  # noqa: PLC0415 - only in SGLang's interpreter, where it is installed

    try:
        import torchvision  # noqa: F401, PLC0415 - whether it imports as it is

        return
    except RuntimeError:
        for name in list(sys.modules):
            if name == "torchvision" or name.startswith("torchvision."):
                del sys.modules[name]
    for op in ("nms", "qnms"):
        with contextlib.suppress(RuntimeError):  # already declared by a partial import
            torch.library.define(f"torchvision::{op}", "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")


def _plain(value: object) -> object:
    return value if value is None or isinstance(value, (bool, int, float, str)) else str(value)


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return f"{type(error).__name__}: {text}"[:600]


def resolve(argv: list[str]) -> dict:
    # After declare_torchvision_ops: SGLang's model configs import torchvision.
    from sglang.srt.arg_groups.overrides import resolution_result  # noqa: PLC0415
    from sglang.srt.server_args import prepare_server_args  # noqa: PLC0415

    try:
        with contextlib.redirect_stderr(io.StringIO()) as err:  # argparse prints its usage there before exiting
            args = prepare_server_args(argv)
    except SystemExit:
        lines = [line for line in err.getvalue().splitlines() if line.strip()]
        return {"ok": False, "refusal": (lines[-1] if lines else "the argument parser refused the arguments")[:600]}
    try:
        args.resolve_once()
    except Exception as error:  # noqa: BLE001 - any refusal of SGLang's resolver is the answer, as one line
        return {"ok": False, "refusal": _one_line(error)}
    changed_by: dict[str, str] = {}
    for source, declared in getattr(args, "_resolved_overrides", None) or ():
        for field in declared:
            if field in SERVED_FIELDS:
                changed_by[field] = str(source)
    served = {field: _plain(resolution_result(args, field)) for field in SERVED_FIELDS}
    return {"ok": True, "served": served, "changed_by": changed_by}


def main() -> int:
    argvs = json.loads(sys.stdin.read())
    if not isinstance(argvs, list) or not all(
        isinstance(argv, list) and all(isinstance(arg, str) for arg in argv) for argv in argvs
    ):
        print("stdin: expected a JSON list of argvs (lists of strings)", file=sys.stderr)
        return 2
    logging.disable(logging.WARNING)  # SGLang's own warnings would interleave with the answer's reader's log
    declare_torchvision_ops()
    out = sys.stdout
    sys.stdout = sys.stderr  # anything SGLang prints goes to stderr; stdout carries the answer alone
    answers = [resolve(argv) for argv in argvs]
    out.write(json.dumps(answers) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
