"""Where an s3:// source lives: its endpoint (from the AWS variables) and its bucket and prefix.

Shared by the boto3 lister and the s5cmd transfer, neither of which should import the other.
"""

from __future__ import annotations

from typing import Mapping
from urllib.parse import urlsplit

from nim_specdec.errors import ConfigError
from nim_specdec.text.redact import mask_uri_credentials


def endpoint_url(env: Mapping[str, str]) -> str | None:
    """The endpoint, refused when it carries `user:password@`: s5cmd would get it on its command line,
    which every user on the host reads in /proc/PID/cmdline."""
    for name in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"):
        url = env.get(name)
        if not url:
            continue
        try:
            userinfo = "@" in (urlsplit(url).netloc or "")
        except ValueError:
            userinfo = "@" in url
        if userinfo:
            raise ConfigError(
                name,
                f"{mask_uri_credentials(url)!r} carries credentials in the URL",
                "remove them from the URL and set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
            )
        return url
    return None


def split_location(location: str) -> tuple[str, str]:
    bucket, _, prefix = location.partition("/")
    return bucket, prefix.strip("/")
