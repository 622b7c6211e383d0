"""vLLM's own check of the command line, in one place: the command it judges (request), vLLM's verdict (judge),
and when the launcher runs it (gate). The run while the weights download is the shell's (launch/early_check/)."""

# Used from outside through these modules.
__all__ = ["gate", "judge", "request"]
