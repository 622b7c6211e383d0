#!/bin/sh
# The wheel stage's arctic-inference build (docker/Dockerfile), in the base image, as root:
#
#   ARCTIC_INFERENCE=arctic-inference==0.3.0 ARCTIC_BUILD_DEPS="..." ARCTIC_CUSTOM_OPS=0 sh build-arctic.sh WHEEL_DIR
#
# The sdist's setup.py imports torch (for cmake paths), so it builds against the base's torch with no
# build isolation. By default only the suffix-tree extension is built (csrc/suffix_decoding:
# project(SuffixDecoding CXX) with nanobind), which needs a C++20 compiler, the Python headers, cmake
# and ninja; a missing compiler or header package is installed from the distribution. The CUDA custom
# ops (csrc/custom_ops: project(CustomOps CXX CUDA) with pybind11) are not used by suffix decoding and
# need nvcc, which the vLLM image lacks: ARCTIC_CUSTOM_OPS=1 builds them too, on a CUDA -devel base.
# Exit 2: the base cannot build it as asked; exit 3: a step failed; the wheel is checked to hold the
# suffix-tree extension, so a build that silently skipped it fails here instead of at serve time.
set -u

wheels=${1:?usage: build-arctic.sh WHEEL_DIR}
: "${ARCTIC_INFERENCE:?}" "${ARCTIC_BUILD_DEPS:?}"
custom_ops=${ARCTIC_CUSTOM_OPS:-0}

python3 -c "import torch" 2>/dev/null || {
  echo "ARCTIC_INFERENCE: $ARCTIC_INFERENCE builds against the base image's torch, which it lacks;" \
    "use a base with torch, or --build-arg ARCTIC_INFERENCE= to build without suffix decoding" >&2
  exit 2
}

missing=""
command -v c++ >/dev/null || missing="g++"
headers='import os, sysconfig; raise SystemExit(not os.path.isfile(sysconfig.get_paths()["include"] + "/Python.h"))'
if ! python3 -c "$headers"; then
  missing="$missing python$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')-dev"
fi
if [ -n "$missing" ]; then
  echo "build-arctic: installing$missing"
  # shellcheck disable=SC2086 # one package name per word
  { apt-get update && apt-get install -y --no-install-recommends $missing && rm -rf /var/lib/apt/lists/*; } || exit 3
fi

ops_deps=""
if [ "$custom_ops" = 1 ]; then
  command -v nvcc >/dev/null || {
    echo "ARCTIC_CUSTOM_OPS=1: the custom ops need nvcc; build on a CUDA -devel base, or leave it 0" >&2
    exit 2
  }
  ops_deps="pybind11==2.13.6"
fi
# shellcheck disable=SC2086 # a list of requirements
python3 -m pip install --no-cache-dir --root-user-action=ignore $ARCTIC_BUILD_DEPS $ops_deps || exit 3

cmake_args=""
if [ "$custom_ops" = 1 ]; then
  cmake_args="-Dpybind11_DIR=$(python3 -m pybind11 --cmakedir)"
fi
ARCTIC_INFERENCE_PRECOMPILED_OPS=$custom_ops CMAKE_ARGS=$cmake_args \
  python3 -m pip wheel --no-cache-dir --no-deps --no-build-isolation --wheel-dir "$wheels" "$ARCTIC_INFERENCE" || exit 3

check='import glob, sys, zipfile
names = [n for w in glob.glob(sys.argv[1] + "/arctic_inference-*.whl") for n in zipfile.ZipFile(w).namelist()]
sys.exit(not any(n.startswith("arctic_inference/suffix_decoding/_C") for n in names))'
python3 -c "$check" "$wheels" || {
  echo "ARCTIC_INFERENCE: the wheel in $wheels has no suffix-tree extension (arctic_inference/suffix_decoding/_C)" >&2
  exit 3
}
echo "build-arctic: $(ls "$wheels"/arctic_inference-*.whl)"
