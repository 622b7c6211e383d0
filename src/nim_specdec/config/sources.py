"""Where a model or draft comes from: parsing of NIM_MODEL_PATH / NIM_DRAFT_MODEL_PATH values.

Pure: no disk or network access. A value is either an absolute local path or a URI with one
of the registered schemes; anything else is a ConfigError naming the variable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nim_specdec.errors import ConfigError
from nim_specdec.text.redact import mask_uri_credentials, preview

REMOTE_SCHEMES = ("ngc", "hf", "s3", "gs")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://(.*)$", re.S)


@dataclass(frozen=True)
class SourceRef:
    """A parsed source. `location` is the part after `scheme://` (the path itself for local)."""

    scheme: str  # "local" or one of REMOTE_SCHEMES
    location: str
    revision: str | None = None

    @property
    def uri(self) -> str:
        if self.scheme == "local":
            return self.location
        rev = f"@{self.revision}" if self.revision else ""
        return f"{self.scheme}://{self.location}{rev}"

    @property
    def is_local(self) -> bool:
        return self.scheme == "local"


def _split_revision(scheme: str, rest: str) -> tuple[str, str | None]:
    # hf accepts ORG/NAME@REV and NIM's ORG/NAME:REV; ngc carries its version after ':'.
    if scheme == "hf":
        for sep in ("@", ":"):
            if sep in rest:
                name, rev = rest.rsplit(sep, 1)
                return name, rev or None
    if scheme == "ngc" and ":" in rest:
        name, rev = rest.rsplit(":", 1)
        return name, rev or None
    return rest, None


def _is_text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def parse_source(text: str, variable: str) -> SourceRef:
    value = text.strip()
    if not value:
        raise ConfigError(
            variable, "is empty", "set it to an absolute directory or an ngc://, hf://, s3:// or gs:// URI"
        )
    if value[:6].lower() == "file:/" and not value[5:].startswith("//"):
        return parse_source(value[5:], variable)  # RFC 8089's file:/path
    match = _SCHEME.match(value)
    if match is None:
        if not value.startswith("/"):
            raise ConfigError(
                variable,
                f"relative path {value!r} is not allowed",
                "use an absolute directory (the path inside the container) or an ngc://, hf://, s3:// or gs:// URI",
            )
        problem = path_problem(value)
        if problem:
            raise ConfigError(variable, f"path {preview(value)!r} {problem}", "use an existing absolute directory")
        return SourceRef("local", _normalize_local(value))
    scheme, rest = match.group(1).lower(), match.group(2).strip("/")
    if scheme == "file":
        # RFC 8089: file:///path and file://localhost/path name a local file; another host is not ours to read.
        host, slash, path = match.group(2).partition("/")
        if host.lower() not in ("", "localhost"):
            raise ConfigError(
                variable,
                f"file:// URI {preview(value)!r} names another host ({preview(host, 40)!r})",
                "give a local path (file:///path), or a mounted folder",
            )
        return parse_source("/" + path.lstrip("/"), variable)
    if scheme not in REMOTE_SCHEMES:
        raise ConfigError(
            variable,
            f"unsupported scheme {scheme!r} in {value!r}",
            "use ngc://, hf://, s3://, gs:// or an absolute directory",
        )
    if "@" in rest.split("/", 1)[0] or any(c in rest for c in "?#"):
        # user:password@ or ?token=... would be copied into the plan, log lines and cache names.
        raise ConfigError(
            variable,
            f"refusing {scheme}:// URI with credentials or a query ({mask_uri_credentials(value)!r})",
            "give credentials through the environment (HF_TOKEN, NGC_API_KEY, AWS_*, GOOGLE_APPLICATION_CREDENTIALS)",
        )
    if not _is_text(rest):
        # Bytes that are not UTF-8 (kept as surrogates by os.environ) cannot go into a URL or a cache name.
        raise ConfigError(
            variable,
            f"{scheme}:// URI {value!r} is not valid UTF-8 text",
            "write the URI in UTF-8 (bucket, object and repository names are text)",
        )
    location, revision = _split_revision(scheme, rest)
    if not location or any(part in ("", ".", "..") for part in location.split("/")):
        raise ConfigError(variable, f"malformed {scheme}:// URI {value!r}", _EXAMPLES[scheme])
    if scheme in ("hf", "ngc") and location.count("/") < 1:
        raise ConfigError(variable, f"malformed {scheme}:// URI {value!r}", _EXAMPLES[scheme])
    return SourceRef(scheme, location, revision)


# Linux's limits: longer paths fail in every system call with an error that names no variable.
PATH_MAX = 4096
NAME_MAX = 255


def path_problem(path: str) -> str | None:
    """Why `path` cannot be a file system path here (too long, a NUL), or None."""
    try:
        encoded = path.encode("utf-8", "surrogateescape")
    except UnicodeError:
        return "is not valid text"
    if b"\x00" in encoded:
        return "contains a NUL character"
    if len(encoded) >= PATH_MAX:
        return f"is longer than {PATH_MAX - 1} bytes"
    if any(len(part) > NAME_MAX for part in encoded.split(b"/")):
        return f"has a component longer than {NAME_MAX} bytes"
    return None


def _normalize_local(path: str) -> str:
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
            continue
        parts.append(part)
    return "/" + "/".join(parts)


_EXAMPLES = {
    "hf": "expected hf://ORG/NAME or hf://ORG/NAME@REVISION",
    "ngc": "expected ngc://ORG/[TEAM/]NAME:VERSION",
    "s3": "expected s3://BUCKET/PREFIX",
    "gs": "expected gs://BUCKET/PREFIX",
}
