"""Redirects of an s3:// store, bounded at the root: botocore's region redirector asks a bucket's region with a
HEAD that can itself be redirected, without end when the store names no region (a RecursionError). The handler
here runs ahead of it (make_client registers it first) and lets through only its one hop to a named region."""

from __future__ import annotations

from urllib.parse import urlsplit

from nim_specdec.errors import printable


class StoreRedirect(Exception):  # noqa: N818
    """The store answered a redirect that is not followed: `where` is the host or region it named."""

    def __init__(self, where: str) -> None:
        super().__init__(f"redirected to {where}")
        self.where = where


def refuse_unbounded_redirect(response=None, request_dict=None, **_kwargs) -> None:
    """Redirects are bounded at one hop, and only botocore's own: to the region the store names (AWS answers
    a request signed for the wrong region so). A redirect that names no region, or a second one, ends the
    request with StoreRedirect, which becomes one line naming where it pointed."""
    if response is None or response[0] is None or response[0].status_code not in (301, 302, 303, 307, 308):
        return
    parsed = response[1] if isinstance(response[1], dict) else {}
    headers = parsed.get("ResponseMetadata", {}).get("HTTPHeaders", {})
    error = parsed.get("Error", {})
    region = headers.get("x-amz-bucket-region") or error.get("Region")
    redirected = ((request_dict or {}).get("context", {}).get("s3_redirect") or {}).get("redirected")
    if region and not redirected:
        return
    # The host only: a Location's path and query may carry a signature.
    location = urlsplit(str(headers.get("location", ""))).netloc
    where = error.get("Endpoint") or location or (f"region {region}" if region else "another host")
    raise StoreRedirect(printable(str(where)[:120]))
