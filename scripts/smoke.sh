#!/usr/bin/env bash
# Smoke check of a running nim-specdec server, then its acceptance report. A server with API keys is
# asked with the key in VLLM_API_KEY.
#
#   scripts/smoke.sh URL [--expect-spec] [--deadline SECONDS]
#
# Waits for URL/v1/health/ready (with a deadline), sends a few greedy chat and completion
# requests and checks them (python -m nim_specdec.observe.smoke), then prints `nim-specdec report`
# for URL/v1/metrics. With --expect-spec it fails when speculative decoding made no drafts.
# Exit codes are the smoke check's (README's table): 0 passed; 4 not ready in time, a request failed
# or no drafts were made; 1 an internal error; 2 for a usage error.
#
# SMOKE_PYTHON is the Python that has nim_specdec (default: python3). To run the check inside
# the server's own container: SMOKE_PYTHON="docker exec CONTAINER python3".
set -euo pipefail

if [[ $# -lt 1 || $1 == -* ]]; then
  echo "usage: scripts/smoke.sh URL [--expect-spec] [--deadline SECONDS]" >&2
  exit 2
fi
url=${1%/}
shift
read -r -a python <<<"${SMOKE_PYTHON:-python3}"

"${python[@]}" -m nim_specdec.observe.smoke "$url" "$@"
echo "--- nim-specdec report --url $url/v1/metrics"
"${python[@]}" -m nim_specdec report --url "$url/v1/metrics"
