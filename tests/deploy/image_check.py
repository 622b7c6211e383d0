"""`make image-test`: build docker/Dockerfile with buildah and check the plan inside the image.

The base image is swapped (build argument BASE_IMAGE) for a Debian root filesystem made here
offline by scripts/build-test-base.sh, since no image registry can be reached. The launcher
is then run inside the built image, as the image's own user, with the environment of the
guide's `docker run` examples, and its plan is checked. Not collected by `make test` (its
name does not start with test_): it needs root, buildah, debootstrap and a few minutes.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from buildah_cli import Buildah

REPO = Path(__file__).resolve().parents[2]
WORKDIR = REPO / "build" / "image-test"
BASE_NAME = "localhost/nim-specdec-test-base"
IMAGE_TAG = "localhost/nim-specdec:image-test"
NGRAM = '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 1}'
EAGLE3 = '{"method": "eagle3", "model": "eagle3_draft", "num_speculative_tokens": 3}'


@pytest.fixture(scope="module")
def buildah():
    tool = Buildah(WORKDIR)
    base_dir = WORKDIR / "base"
    start = time.monotonic()
    subprocess.run(["bash", str(REPO / "scripts" / "build-test-base.sh"), str(base_dir), sys.executable], check=True)
    # Tagged with the root filesystem's key: a rebuilt rootfs.tar gets a new base image.
    base_tag = f"{BASE_NAME}:{(base_dir / 'rootfs.key').read_text().strip()}"
    if not tool.has_image(base_tag):
        tool.build(REPO / "docker" / "test-base" / "Containerfile", base_dir, base_tag)
    print(f"\nimage-test: test base ready in {time.monotonic() - start:.1f} s")
    # ARCTIC_INFERENCE keeps its default: the wheel stage builds the suffix-tree extension against the
    # base's torch (a CPU build here; the extension uses neither CUDA nor torch).
    # EXTRAS and AIPERF empty: nothing from the package index (the base is made offline).
    args = {"BASE_IMAGE": base_tag, "EXTRAS": "", "AIPERF": ""}
    seconds = tool.build(REPO / "docker" / "Dockerfile", REPO, IMAGE_TAG, args)
    print(f"image-test: docker/Dockerfile built in {seconds:.1f} s")
    yield tool
    # Keep the base (it is reused), drop this build and its intermediate stage.
    tool.call(["rmi", "--force", IMAGE_TAG])
    tool.call(["rmi", "--prune"])


@pytest.fixture(scope="module")
def container(buildah: Buildah):
    ctr = buildah.container(IMAGE_TAG)
    # Stand-ins for the guide's mounted model directories of the air-gapped example.
    made = buildah.run(
        ctr,
        [
            "sh",
            "-c",
            "mkdir -p /models/target /models/draft"
            ' && echo \'{"architectures": ["LlamaForCausalLM"], "model_type": "llama"}\' > /models/target/config.json'
            ' && echo \'{"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama"}\' > /models/draft/config.json',  # noqa: E501
        ],
        user="0:0",
    )
    assert made.returncode == 0, made.stderr
    yield ctr
    buildah.remove(ctr)


def plan_in_image(buildah: Buildah, ctr: str, env: dict[str, str], args: list[str]) -> dict:
    done = buildah.run(ctr, ["nim-specdec", "plan", *args], env=env)
    assert done.returncode == 0, f"plan failed in the image: {done.stderr}"
    return json.loads(done.stdout)


def test_image_config_matches_the_guide(buildah: Buildah) -> None:
    config = buildah.image_config(IMAGE_TAG)
    docker = config["Docker"]["config"]
    assert docker["Entrypoint"] == ["nim-specdec", "serve"]
    assert not docker.get("Cmd")
    # Numeric with group 0: a pod's runAsNonRoot checks it without a runAsUser.
    assert docker["User"] == "1000:0"
    assert "8000/tcp" in docker["ExposedPorts"]
    assert "/opt/nim/.cache" in docker["Volumes"]
    assert any("/v1/health/ready" in part for part in docker["Healthcheck"]["Test"])
    assert docker["Labels"]["org.opencontainers.image.title"] == "nim-specdec"
    env = dict(item.split("=", 1) for item in docker["Env"])
    assert env["NIM_CACHE_PATH"] == "/opt/nim/.cache"
    assert not [name for name in env if any(word in name for word in ("KEY", "TOKEN", "SECRET", "PASSWORD"))]


def test_image_user_is_not_root_and_can_write_the_cache(buildah: Buildah, container: str) -> None:
    done = buildah.run(container, ["sh", "-c", "id -u && touch /opt/nim/.cache/probe && rm /opt/nim/.cache/probe"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1000"]


def test_an_arbitrary_uid_in_group_0_writes_home_and_the_cache(buildah: Buildah, container: str) -> None:
    """OpenShift's restricted SCC runs the image as a UID of its choosing, in group 0."""
    probe = "touch /opt/nim/probe /opt/nim/.cache/probe && rm /opt/nim/probe /opt/nim/.cache/probe && id -u"
    done = buildah.run(container, ["sh", "-c", probe], user="123456:0")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["123456"]


def test_builtin_method_on_with_the_toggle(buildah: Buildah, container: str) -> None:
    plan = plan_in_image(
        buildah, container, {"NIM_SPECDEC_ENABLE": "1", "NIM_MODEL_NAME": "meta/llama-3.1-8b-instruct"}, []
    )
    assert plan["mode"] == "model-specific"
    assert plan["speculative"]["enabled"] is True
    assert plan["speculative"]["method"] == "eagle3"
    assert plan["draft"]["path"] == "/opt/nim/workspace/eagle3_draft"  # the container's own, off the volume
    # The GPU image runs vLLM's own console script, as the test base (no vLLM) is planned to.
    assert plan["argv"][:2] == ["vllm", "serve"]
    spec = json.loads(plan["argv"][plan["argv"].index("--speculative-config") + 1])
    assert spec["model"] == "/opt/nim/workspace/eagle3_draft"
    assert plan["argv"][plan["argv"].index("--port") + 1] == "8000"


def test_toggle_off_serves_without_speculation(buildah: Buildah, container: str) -> None:
    plan = plan_in_image(
        buildah, container, {"NIM_SPECDEC_ENABLE": "0", "NIM_MODEL_NAME": "meta/llama-3.1-8b-instruct"}, []
    )
    assert plan["speculative"]["enabled"] is False
    assert plan["draft"] is None
    assert "--speculative-config" not in plan["argv"]


def test_model_free_ngram_from_docker_run_arguments(buildah: Buildah, container: str) -> None:
    plan = plan_in_image(
        buildah, container, {"NIM_MODEL_PATH": "hf://meta-llama/Llama-3.1-8B-Instruct"}, ["--speculative-config", NGRAM]
    )
    assert plan["mode"] == "model-free"
    assert plan["speculative"]["config"] == json.loads(NGRAM)
    assert plan["draft"] is None


def test_air_gapped_local_target_and_draft(buildah: Buildah, container: str) -> None:
    env = {"NIM_MODEL_PATH": "/models/target", "NIM_DRAFT_MODEL_PATH": "/models/draft"}
    plan = plan_in_image(buildah, container, env, ["--speculative-config", EAGLE3])
    assert plan["target"]["model"] == "/models/target"
    assert plan["draft"]["source"] == "/models/draft"
    assert plan["speculative"]["config"]["model"] == plan["draft"]["path"] == "/opt/nim/workspace/eagle3_draft"


def test_bad_configuration_is_one_line_exit_2(buildah: Buildah, container: str) -> None:
    done = buildah.run(container, ["nim-specdec", "plan"], env={"NIM_SPECDEC_ENABLE": "maybe"})
    assert done.returncode == 2
    assert "NIM_SPECDEC_ENABLE" in done.stderr and "Traceback" not in done.stderr


def test_image_has_no_build_leftovers(buildah: Buildah, container: str) -> None:
    # buildah (unlike BuildKit) may leave the empty mount point of the bind mount: only content counts.
    done = buildah.run(
        container,
        ["sh", "-c", 'test -z "$(ls -A /tmp/wheels 2>/dev/null)" && test ! -e /build && command -v nim-specdec'],
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_healthcheck_follows_the_ready_endpoint(buildah: Buildah, container: str) -> None:
    """The image's own HEALTHCHECK command, run inside it against a stand-in server on
    NIM_SERVER_PORT: healthy while /v1/health/ready answers 200, unhealthy on 404."""
    test = buildah.image_config(IMAGE_TAG)["Docker"]["config"]["Healthcheck"]["Test"]
    assert test[0] == "CMD"
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    script = (
        'mkdir -p /tmp/hc/v1/health && cd /tmp/hc && python3 -m http.server "$NIM_SERVER_PORT" --bind 127.0.0.1 '
        ">/dev/null 2>&1 & server=$!; "
        "for _ in $(seq 50); do python3 -c \"import socket,os; socket.create_connection(('127.0.0.1', int(os.environ['NIM_SERVER_PORT'])))\" 2>/dev/null && break; sleep 0.1; done; "  # noqa: E501
        '"$@"; echo "not-ready:$?"; echo ok > /tmp/hc/v1/health/ready; "$@"; echo "ready:$?"; kill $server'
    )
    done = buildah.run(container, ["sh", "-c", script, "healthcheck", *test[1:]], env={"NIM_SERVER_PORT": str(port)})
    assert "not-ready:1" in done.stdout and "ready:0" in done.stdout, done.stdout + done.stderr


def test_suffix_decoding_extension_is_built_without_the_cuda_ops(buildah: Buildah, container: str) -> None:
    """What vLLM's suffix method imports works in the image; the CUDA custom ops (opt-in) were not built."""
    script = (
        "import importlib.util\n"
        "from arctic_inference.suffix_decoding import SuffixDecodingCache\n"
        "cache = SuffixDecodingCache(max_tree_depth=8, max_cached_requests=4)\n"
        "cache.start_request('r', [1, 2, 3, 1, 2, 3])\n"
        "cache.add_active_response('r', [1, 2])\n"
        "print('suffix-ok', importlib.util.find_spec('arctic_inference.custom_ops') is None)\n"
    )
    done = buildah.run(container, ["python3", "-c", script])
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["suffix-ok", "True"]


def test_serve_on_a_root_owned_cache_names_the_folder_its_owner_and_fix(buildah: Buildah, container: str) -> None:
    """`docker run -v DIR:/opt/nim/.cache` with a DIR made by root (0755): the image's UID 1000 cannot write
    it, and serve says so in one line before it links or downloads anything (exit 3)."""
    # The test base has no vLLM, and serve stops first on that (exit 3 too): an empty `vllm` package and a bare
    # distribution record beside it (where the launcher looks for the installed release) stand in for the
    # install for this one run (nothing of vLLM is imported before the refusal).
    site = '$(python3 -c "import site; print(site.getsitepackages()[0])")'
    record = f"{site}/vllm-0.32.0.dist-info"
    package = f"{site}/vllm"
    made = buildah.run(
        container,
        [
            "sh",
            "-c",
            "mkdir -p /srv/rootcache && chmod 0755 /srv/rootcache"
            f' && mkdir -p "{record}" "{package}" && touch "{package}/__init__.py"'
            f' && printf "Metadata-Version: 2.1\\nName: vllm\\nVersion: 0.32.0\\n" > "{record}/METADATA"',
        ],
        user="0:0",
    )
    assert made.returncode == 0, made.stderr
    # The image's workspace is the container's own (/opt/nim/workspace): local models need nothing written to
    # the volume. A workspace on the volume (where NIM_WORKSPACE points there) must be written, and is refused.
    env = {
        "NIM_CACHE_PATH": "/srv/rootcache",
        "NIM_WORKSPACE": "/srv/rootcache/workspace",
        "NIM_MODEL_PATH": "/models/target",
        "NIM_DRAFT_MODEL_PATH": "/models/draft",
    }
    try:
        done = buildah.run(container, ["nim-specdec", "serve", "--speculative-config", EAGLE3], env=env)
    finally:
        buildah.run(container, ["sh", "-c", f'rm -rf "{record}" "{package}"'], user="0:0")
    errors = [line for line in done.stderr.splitlines() if "error" in line]
    assert done.returncode == 3, done.stdout + done.stderr
    assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr
    line = errors[0]
    assert "cannot write /srv/rootcache: it is owned by uid 0 with mode 0755" in line
    assert "and the launcher runs as uid 1000" in line
    assert "sudo chown -R 1000:0" in line
    listed = buildah.run(container, ["sh", "-c", "ls -A /srv/rootcache | wc -l"], user="0:0")
    assert listed.stdout.strip() == "0", "nothing half-written"
