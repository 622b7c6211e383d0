"""Code that runs inside the vLLM server process: NIM endpoints and payload capture middlewares."""
