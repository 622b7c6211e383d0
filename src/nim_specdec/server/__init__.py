"""Code that runs inside the vLLM server process: the NIM endpoints, and the stack that puts them and capture
(nim_specdec/capture/) in one middleware."""
