"""The engine arguments, decided from where the user gives them (the command line, NIM_PASSTHROUGH_ARGS,
NIM_SPECDEC_ARGS, the NIM_* variables that set one argument) and the release's snapshot: read as vLLM reads them,
merged by layer, resolved to plain values, written as the vLLM command the launcher execs, and read back from that
command so that the plan reports what vLLM is given."""
