"""Each backend's error table on its library's real exception classes: what is retried, what ends the
download with which line (the contract suite shows the same on live loopback servers)."""

from __future__ import annotations

import pytest

from nim_specdec.errors import MaterializeError
from nim_specdec.fetchers import ngc
from nim_specdec.fetchers.buckets import gcs, s3
from nim_specdec.fetchers.hub import hf


class _Response:
    def __init__(self, status: int) -> None:
        self.status_code = status


def _cases():
    import aiohttp
    import botocore.exceptions as bc
    import google.api_core.exceptions as ge
    import httpx2
    import requests
    from huggingface_hub import errors as hub
    from ngcbase import errors as ngc_errors

    s3b, gcsb, hfb, ngcb = s3.S3Backend(), gcs.GCSBackend(), hf.HFBackend(), ngc.NGCBackend()
    return [
        # (backend, error, transient?)
        ("s3-endpoint", s3b, bc.EndpointConnectionError(endpoint_url="http://x"), True),
        ("s3-read-timeout", s3b, bc.ReadTimeoutError(endpoint_url="http://x"), True),
        ("s3-no-credentials", s3b, bc.NoCredentialsError(), False),
        ("s3-bug", s3b, KeyError("x"), False),
        ("gcs-connection", gcsb, requests.ConnectionError("reset"), True),
        ("gcs-503", gcsb, ge.ServiceUnavailable("busy"), True),
        ("gcs-404", gcsb, ge.NotFound("gone"), False),
        ("hf-connect", hfb, httpx2.ConnectError("refused"), True),
        (
            "hf-gated",
            hfb,
            hub.GatedRepoError("gated", response=httpx2.Response(403, request=httpx2.Request("GET", "https://hub"))),
            False,
        ),
        ("ngc-payload", ngcb, aiohttp.ClientPayloadError("cut"), True),
        ("ngc-not-found", ngcb, ngc_errors.ResourceNotFoundException("no such model"), False),
        ("ngc-429", ngcb, _with_response(requests.HTTPError("slow down"), 429), True),
    ]


def _with_response(err, status):
    err.response = _Response(status)
    return err


CASES = _cases()


@pytest.mark.parametrize("backend, err, transient", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_retried_or_final(backend, err, transient):
    assert backend.is_transient(err) is transient


@pytest.mark.parametrize(
    "module, err, words",
    [
        (s3, "no-credentials", "no AWS credentials found"),
        (hf, "gated", "the repository is gated"),
        (ngc, "not-found", "model or version not found on NGC"),
    ],
)
def test_permanent_errors_have_their_line(module, err, words):
    error = next(c[2] for c in CASES if c[0].endswith(err) and c[0].startswith(module.__name__.rsplit(".", 1)[1]))
    with pytest.raises(MaterializeError) as raised:
        module._raise_permanent("x://uri", error)
    assert raised.value.one_line().startswith(f"x://uri: {words}")
