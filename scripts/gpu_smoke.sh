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
#   clean     CACHE_DIR removed (its files belong to the server's UID: removed from a container)
#
# The server runs as the manifests run it (deploy/k8s/deployment.yaml): a read-only root file system with
# writable emptyDir-like tmpfs mounts at HOME (/opt/nim), the workspace's parent and /tmp, and an arbitrary
# UID in group 0 as OpenShift assigns one ($SMOKE_UID, default 1000650000; not the image's 1000). CACHE_DIR
# is given to that UID once, from a container, as fsGroup or a volume's access point does on a cluster.
#
# Needs IMAGE, CACHE_DIR and REPORTS; HF_TOKEN for the gated default model. Exit 4 when a check fails.
set -euo pipefail

usage="usage: scripts/gpu_smoke.sh build|spec-on|spec-off|warm|clean|stop NAME"
[[ $# -ge 1 ]] || { echo "$usage" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
: "${IMAGE:?set IMAGE}" "${CACHE_DIR:?set CACHE_DIR}" "${REPORTS:?set REPORTS}"
MODEL_NAME=${MODEL_NAME:-meta/llama-3.1-8b-instruct}
MIN_ACCEPTANCE_LENGTH=${MIN_ACCEPTANCE_LENGTH:-1.5}
PORT=${PORT:-8000}
SMOKE_UID=${SMOKE_UID:-1000650000}
[[ $SMOKE_UID =~ ^[1-9][0-9]{0,9}$ ]] || { echo "gpu-smoke: SMOKE_UID=$SMOKE_UID is not a UID; use a number such as 1000650000" >&2; exit 2; }
url=http://127.0.0.1:$PORT  # from this machine: the host port the container's 8000 is published on
inside=http://127.0.0.1:8000  # from inside the container: the server's own port (NIM_SERVER_PORT's default)
# A key for this run only: vLLM reads it from VLLM_API_KEY (never on a command line) and every check sends it.
export SMOKE_API_KEY=${SMOKE_API_KEY:-smoke-$RANDOM$RANDOM}
checks=(python3 "$here/gpu_smoke.py")

as_root() {  # COMMAND...: in the image as root, with CACHE_DIR at /c (what an init step does on a cluster)
  docker run --rm --user 0:0 --entrypoint sh -v "$CACHE_DIR:/c" "$IMAGE" -c "$@"
}

own_cache() {  # CACHE_DIR to the server's UID, group 0, open to nobody else (the launcher trusts no more)
  # shellcheck disable=SC2016  # $1 is expanded by the container's shell, from the argument after the script
  as_root 'chown "$1:0" /c && chmod 0770 /c' own "$SMOKE_UID"
}

start() {  # NAME NIM_SPECDEC_ENABLE: a detached server on the shared cache, locked down as the manifests run it
  # tmpfs as Kubernetes' emptyDirs: owned by root, open to all, executable (Triton and CUDA load what they
  # compile from HOME and /tmp). NIM_WORKSPACE lies under /opt/nim/scratch, as in the manifests.
  docker run -d --name "$1" --gpus all --shm-size=16GB -p "$PORT:8000" \
    --read-only --user "$SMOKE_UID:0" --cap-drop ALL --security-opt no-new-privileges \
    --tmpfs /opt/nim:rw,exec,mode=0777 --tmpfs /opt/nim/scratch:rw,exec,mode=0777 --tmpfs /tmp:rw,exec,mode=1777 \
    -e HF_TOKEN -e NIM_SPECDEC_ENABLE="$2" -e NIM_MODEL_NAME="$MODEL_NAME" -e NIM_MAX_MODEL_LEN=4096 \
    -e NIM_CACHE_PATH=/opt/nim/.cache -e NIM_WORKSPACE=/opt/nim/scratch/workspace \
    -e VLLM_API_KEY="$SMOKE_API_KEY" -e SMOKE_API_KEY -v "$CACHE_DIR:/opt/nim/.cache" "$IMAGE" >/dev/null
}

stop() {  # NAME: its log into the reports, then gone
  docker logs "$1" >"$REPORTS/$1.log" 2>&1 || true
  docker stop --time 120 "$1" >/dev/null 2>&1 || true
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
    own_cache
    trap 'stop nim-smoke-on' EXIT
    start nim-smoke-on 1
    served nim-smoke-on
    # The metrics parser is nim_specdec's: this check runs in the server's container.
    docker exec -i nim-smoke-on python3 - acceptance "$inside" --min "$MIN_ACCEPTANCE_LENGTH" \
      --api-key-env SMOKE_API_KEY <"$here/gpu_smoke.py" | tee "$REPORTS/on.txt"
    ;;
  spec-off)
    own_cache
    trap 'stop nim-smoke-off' EXIT
    start nim-smoke-off 0
    served nim-smoke-off
    "${checks[@]}" same "$REPORTS/nim-smoke-on.json" "$REPORTS/nim-smoke-off.json"
    ;;
  warm)
    own_cache
    trap 'stop nim-smoke-warm' EXIT
    start nim-smoke-warm 1
    "${checks[@]}" ready "$url" --api-key-env SMOKE_API_KEY --deadline 1800
    docker logs nim-smoke-warm >"$REPORTS/nim-smoke-warm.log" 2>&1
    "${checks[@]}" warm "$REPORTS/nim-smoke-warm.log"
    ;;
  clean)
    as_root 'rm -rf /c/* /c/.[!.]* /c/..?*' clean
    rmdir "$CACHE_DIR"
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
