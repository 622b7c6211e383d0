"""The compile cache's launch side, in one place: the claim of the plan's key directory at start (claim) and the
removal of keys no server has used for a while (prune). Where the cache goes is planned in
engines/vllm/release/compile_dirs.py."""

# Used from outside through these modules.
__all__ = ["claim", "prune"]
