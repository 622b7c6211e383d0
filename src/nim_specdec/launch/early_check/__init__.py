"""vLLM's check run while the weights download: the config files fetched first, the check run on them, and the
download going on in a process of its own (download_child, started by while_downloading)."""

# Used from outside through this module; download_child is while_downloading's own part.
__all__ = ["while_downloading"]
