PYTHON ?= python3
# AIPerf conflicts with vLLM's pins, so it lives in a virtualenv of its own. The tests find it through
# AIPERF_BIN (default .venv-aiperf/bin/aiperf). The lock lets several checkouts on one machine share a
# venv (make aiperf-venv AIPERF_VENV=/shared/path) without installing it twice at once.
AIPERF_VENV ?= .venv-aiperf
AIPERF_VERSION := 0.13.0
AIPERF_LOCK ?= /tmp/aiperf-venv.lock

.PHONY: aiperf-venv

aiperf-venv:
	flock $(AIPERF_LOCK) sh -c 'test -x $(AIPERF_VENV)/bin/aiperf || { $(PYTHON) -m venv $(AIPERF_VENV) && $(AIPERF_VENV)/bin/pip install -q aiperf==$(AIPERF_VERSION) && $(AIPERF_VENV)/bin/aiperf --version; }'
