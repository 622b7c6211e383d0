"""What the remote run is given and what its tests expect of it: two API keys, a built-in model's NIM name and
repository id (the order of --served-model-name: a NIM client's name first), a draft named by a bare name."""

# Model-free mode: the config is given as a vLLM argument and names the draft by a bare name.
DRAFT_MODEL_CONFIG = {"method": "draft_model", "model": "my_draft", "num_speculative_tokens": 3}
KEYS = ("first-key-4f1c9e", "second-key-8a2d7b")
NIM_NAME, REPO_ID = "demo/nim-demo-instruct", "demo-org/Demo-Instruct"
SERVED = [NIM_NAME, REPO_ID]
