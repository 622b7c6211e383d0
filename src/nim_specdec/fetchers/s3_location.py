"""Where an s3:// source lives: its endpoint (from the AWS variables) and its bucket and prefix.

Shared by the boto3 lister and the s5cmd transfer, neither of which should import the other.
"""

from __future__ import annotations

from typing import Mapping


def endpoint_url(env: Mapping[str, str]) -> str | None:
    return env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or None


def split_location(location: str) -> tuple[str, str]:
    bucket, _, prefix = location.partition("/")
    return bucket, prefix.strip("/")
