"""The planner: the settings and the sources' facts merged into a typed plan and the vLLM command. No I/O."""
