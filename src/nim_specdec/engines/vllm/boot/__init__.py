"""The process vLLM serves in: the boot that runs vLLM's own check in the server's process, watches the ranks
and leaves vLLM's exit status as the container's, and the server entry it runs (`vllm serve` with the NIM
endpoints). Part of the shell: it stands in the launch stage."""
