"""Scheme -> fetcher backend, imported only when that scheme is used.

Keeping the import lazy keeps `plan` and a local-only `serve` free of boto3, google-cloud,
ngcsdk and huggingface_hub, which cost start-up time and may not be installed.
"""

from __future__ import annotations

import importlib
from typing import Mapping

from nim_specdec.errors import MaterializeError
from nim_specdec.fetchers.download.base import Fetcher

# scheme -> ("module:Class", pip extra that provides its library)
BACKENDS: Mapping[str, tuple[str, str]] = {
    "local": ("nim_specdec.fetchers.local:LocalFetcher", ""),
    "s3": ("nim_specdec.fetchers.buckets.s3:S3Fetcher", "s3"),
    "gs": ("nim_specdec.fetchers.buckets.gcs:GCSFetcher", "gcs"),
    "hf": ("nim_specdec.fetchers.hub.hf:HFFetcher", "hf"),
    "ngc": ("nim_specdec.fetchers.ngc:NGCFetcher", "ngc"),
}


def get_fetcher(scheme: str) -> Fetcher:
    try:
        target, extra = BACKENDS[scheme]
    except KeyError:
        raise MaterializeError(
            f"{scheme}://", "this source scheme is not supported yet", "use an absolute local directory for now"
        ) from None
    module_name, _, class_name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        hint = f"pip install 'nim-specdec[{extra}]'" if extra else "reinstall nim-specdec"
        raise MaterializeError(f"{scheme}://", f"backend unavailable ({err.name} is not installed)", hint) from None
    return getattr(module, class_name)()
