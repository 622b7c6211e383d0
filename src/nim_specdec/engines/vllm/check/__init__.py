"""vLLM's own check of the command line, in one place: the command it judges (request), vLLM's verdict (judge),
when the launcher runs it (gate), and the run while the weights download (while_downloading, whose download
runs in a process of its own, download_child)."""

# Used from outside through these modules; download_child is while_downloading's own part.
__all__ = ["gate", "judge", "request", "while_downloading"]
