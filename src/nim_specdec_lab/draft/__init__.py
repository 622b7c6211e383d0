"""A draft trained on the user's own traffic: from a capture to an EAGLE3 draft that vLLM serves, measured.

The flow (draft.flow) splits the capture, regenerates the training responses with the target, hands them
to the training stage (draft.training, through the seam in draft.trainer_seam), checks the export against
the target and measures it on the held-out requests against the same draft untrained and n-gram.
"""
