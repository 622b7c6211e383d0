#!/usr/bin/env bash
# The GPU smoke test's steps (.github/workflows/gpu-smoke.yml), runnable by hand on a GPU machine with
# Docker and the NVIDIA container toolkit:
#
#   scripts/gpu_smoke.sh build | spec-on | spec-off | warm | stop NAME
#
#   build     the image ($IMAGE), suffix-tree extension included
#   spec-on   the built-in EAGLE3 pair of $MODEL_NAME (HF_TOKEN: a gated source) served with an API key;
#             readiness with the key (and 401 without it), greedy outputs saved, and a floor on the
#             acceptance length ($MIN_ACCEPTANCE_LENGTH: no drafts fails too); the first start fills $CACHE_DIR
#   spec-off  the same model, speculation off: greedy outputs equal to spec-on's for more than 60% of the
#             prompts, as vLLM's own EAGLE test counts them (scripts/gpu_smoke.py same)
#   warm      a second speculative start on the filled cache: nothing downloaded, vLLM's check inside
#             vllm_boot, the compile cache reused (scripts/gpu_smoke.py warm reads its log)
#
# Needs IMAGE, CACHE_DIR and REPORTS; HF_TOKEN for the gated default model. Exit 4 when a check fails.
set -euo pipefail

usage="usage: scripts/gpu_smoke.sh build|spec-on|spec-off|warm|stop NAME"
[[ $# -ge 1 ]] || { echo "$usage" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
: "${IMAGE:?set IMAGE}" "${CACHE_DIR:?set CACHE_DIR}" "${REPORTS:?set REPORTS}"
MODEL_NAME=${MODEL_NAME:-meta/llama-3.1-8b-instruct}
MIN_ACCEPTANCE_LENGTH=${MIN_ACCEPTANCE_LENGTH:-1.5}
PORT=${PORT:-8000}
url=http://127.0.0.1:$PORT  # from this machine: the host port the container's 8000 is published on
inside=http://127.0.0.1:8000  # from inside the container: the server's own port (NIM_SERVER_PORT's default)
# A key for this run only: vLLM reads it from VLLM_API_KEY (never on a command line) and every check sends it.
export SMOKE_API_KEY=${SMOKE_API_KEY:-smoke-$RANDOM$RANDOM}
checks=(python3 "$here/gpu_smoke.py")

start() {  # NAME NIM_SPECDEC_ENABLE: a detached server on the shared cache, as the cache's owner
  docker run -d --name "$1" --gpus all --shm-size=16GB --user "$(id -u):0" -p "$PORT:8000" \
    -e HF_TOKEN -e NIM_SPECDEC_ENABLE="$2" -e NIM_MODEL_NAME="$MODEL_NAME" -e NIM_MAX_MODEL_LEN=4096 \
    -e VLLM_API_KEY="$SMOKE_API_KEY" -e SMOKE_API_KEY -v "$CACHE_DIR:/opt/nim/.cache" "$IMAGE" >/dev/null
}

stop() {  # NAME: its log into the reports, then gone
  docker logs "$1" >"$REPORTS/$1.log" 2>&1 || true
  docker stop --time 60 "$1" >/dev/null 2>&1 || true
  docker rm -f "$1" >/dev/null 2>&1 || true
}

served() {  # NAME: ready with the key, greedy outputs into REPORTS/NAME.json
  "${checks[@]}" ready "$url" --api-key-env SMOKE_API_KEY --deadline 1800
  "${checks[@]}" greedy "$url" "$(served_name)" "$REPORTS/$1.json" --api-key-env SMOKE_API_KEY
}

served_name() {
  docker run --rm -e HF_TOKEN -e NIM_MODEL_NAME="$MODEL_NAME" --entrypoint nim-specdec "$IMAGE" plan \
    | python3 -c 'import json, sys; a = json.load(sys.stdin)["argv"]; print(a[a.index("--served-model-name") + 1])'
}

mkdir -p "$CACHE_DIR" "$REPORTS"
case $1 in
  build)
    docker build -f "$here/../docker/Dockerfile" -t "$IMAGE" "$here/.."
    docker run --rm --entrypoint python3 "$IMAGE" -c 'from arctic_inference.suffix_decoding import SuffixDecodingCache'
    ;;
  spec-on)
    trap 'stop nim-smoke-on' EXIT
    start nim-smoke-on 1
    served nim-smoke-on
    # The metrics parser is nim_specdec's: this check runs in the server's container.
    docker exec -i nim-smoke-on python3 - acceptance "$inside" --min "$MIN_ACCEPTANCE_LENGTH" \
      --api-key-env SMOKE_API_KEY <"$here/gpu_smoke.py" | tee "$REPORTS/on.txt"
    ;;
  spec-off)
    trap 'stop nim-smoke-off' EXIT
    start nim-smoke-off 0
    served nim-smoke-off
    "${checks[@]}" same "$REPORTS/nim-smoke-on.json" "$REPORTS/nim-smoke-off.json"
    ;;
  warm)
    trap 'stop nim-smoke-warm' EXIT
    start nim-smoke-warm 1
    "${checks[@]}" ready "$url" --api-key-env SMOKE_API_KEY --deadline 1800
    docker logs nim-smoke-warm >"$REPORTS/nim-smoke-warm.log" 2>&1
    "${checks[@]}" warm "$REPORTS/nim-smoke-warm.log"
    ;;
  stop)
    [[ $# -eq 2 ]] || { echo "$usage" >&2; exit 2; }
    stop "$2"
    ;;
  *)
    echo "$usage" >&2
    exit 2
    ;;
esac
