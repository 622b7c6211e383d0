#!/usr/bin/env bash
# Make OUT/rootfs.tar: a Debian root filesystem that stands in for the vLLM base image when
# docker/Dockerfile is built by `make image-test` (no image registry is reachable there).
#
#   scripts/build-test-base.sh OUT_DIR [PYTHON]
#
# It holds python3, pip, g++ and the Python headers (from Debian's packages, via debootstrap), the
# launcher's runtime dependencies from pyproject.toml and PYTHON's torch version (the vLLM image has
# them), and a local wheel folder with the build backend and what the Dockerfile's arctic-inference
# build installs (its sdist and ARCTIC_BUILD_DEPS, read from the Dockerfile), so that the Dockerfile's
# pip steps, the suffix-tree build included, run offline.
# Needs root, debootstrap and a Debian mirror; PyPI is reached only through PYTHON's pip, on
# the host. A finished rootfs.tar is reused while the suite and the dependencies are the same.
set -euo pipefail

out=${1:?usage: build-test-base.sh OUT_DIR [PYTHON]}
python=${2:-python3}
suite=${DEBIAN_SUITE:-bookworm}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
# The base's Python is Debian bookworm's 3.11: wheels are fetched for that interpreter.
py_version=${BASE_PYTHON_VERSION:-3.11}

# The launcher's runtime dependencies, read from pyproject.toml so the base follows them.
here=$(cd "$(dirname "$0")/.." && pwd)
mapfile -t deps < <("$python" -c 'import sys, tomllib; print("\n".join(tomllib.load(open(sys.argv[1], "rb"))["project"]["dependencies"]))' "$here/pyproject.toml")
# torch as PYTHON has it (a CPU build stands in for the image's CUDA one: the suffix tree uses neither),
# and numpy, which the suffix-tree cache imports at run time (the vLLM image has both).
torch=$("$python" -c 'import importlib.metadata as m; print("torch==" + m.version("torch"))')
# The arctic-inference requirement and its build tools, as the Dockerfile's ARG lines pin them.
dockerfile_arg() { sed -n "s/^ARG $1=\"\{0,1\}\([^\"]*\)\"\{0,1\}\$/\1/p" "$here/docker/Dockerfile"; }
arctic=$(dockerfile_arg ARCTIC_INFERENCE)
read -r -a arctic_deps <<<"$(dockerfile_arg ARCTIC_BUILD_DEPS)"
[[ -n $arctic && ${#arctic_deps[@]} -gt 0 ]] || { echo "build-test-base: no ARCTIC_* ARG in docker/Dockerfile" >&2; exit 1; }
key=$(printf '%s\n' "$suite" "$py_version" "${deps[@]}" "$torch" "$arctic" "${arctic_deps[@]}" | sha256sum | cut -c1-16)

mkdir -p "$out"
out=$(cd "$out" && pwd)
if [[ -s "$out/rootfs.tar" && "$(cat "$out/rootfs.key" 2>/dev/null)" == "$key" ]]; then
  echo "test base: reusing $out/rootfs.tar"
  exit 0
fi
rm -f "$out/rootfs.tar" "$out/rootfs.key"

rootfs="$out/rootfs"
rm -rf "$rootfs" "$out/rootfs.tar.partial"
# The mirror and PyPI are reached over the network: a connection dropped mid-file costs one more try
# (scripts/retry.sh's rule), not the build. A failed debootstrap leaves a partial root behind: removed first.
retry="$here/scripts/retry.sh"
debootstrap_once() {
  rm -rf "$rootfs"
  debootstrap --variant=minbase --include="python3,python3-pip,g++,python$py_version-dev" "$suite" "$rootfs" "$mirror" \
    >"$out/debootstrap.log" 2>&1
}
echo "test base: debootstrap $suite (python3, pip, g++, python$py_version-dev)"
for try in 1 2 3; do
  debootstrap_once && break
  tail -20 "$out/debootstrap.log" >&2
  if [[ $try == 3 ]]; then
    echo "test base: debootstrap failed 3 times" >&2
    exit 1
  fi
  echo "test base: debootstrap failed (try $try of 3); trying again in $((10 * try)) s" >&2
  sleep $((10 * try))
done

echo "test base: runtime dependencies and the build backend as wheels"
mkdir -p "$rootfs/opt/wheels"
sh "$retry" 3 "$python" -m pip download --quiet --only-binary=:all: --python-version "$py_version" \
  --implementation cp --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
  --dest "$rootfs/opt/wheels" \
  "${deps[@]}" "hatchling>=1.21" "$torch" numpy "${arctic_deps[@]}"
# The sdist only; its metadata is prepared with PYTHON's torch (no isolated build of a second torch).
sh "$retry" 3 "$python" -m pip download --quiet --no-deps --no-build-isolation --dest "$rootfs/opt/wheels" "$arctic"

# pip inside the image: offline, from the wheel folder. The vLLM image's Python is not
# marked externally managed; Debian's is, so that guard is lifted here to match.
cat >"$rootfs/etc/pip.conf" <<'CONF'
[global]
no-index = true
find-links = /opt/wheels
break-system-packages = true
disable-pip-version-check = true
CONF
chroot "$rootfs" python3 -m pip install --quiet --root-user-action=ignore "${deps[@]}" "$torch" numpy

rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/usr/share/doc/* \
  "$rootfs"/usr/share/man/* "$rootfs"/root/.cache
tar --numeric-owner -C "$rootfs" -cf "$out/rootfs.tar.partial" .
mv "$out/rootfs.tar.partial" "$out/rootfs.tar"
echo "$key" >"$out/rootfs.key"
rm -rf "$rootfs"
echo "test base: $out/rootfs.tar ($(du -h "$out/rootfs.tar" | cut -f1))"
