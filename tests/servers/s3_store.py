"""An S3 endpoint on loopback: moto in server mode (real HTTP), behind the fault proxy."""

from __future__ import annotations

from servers.fault_proxy import FaultProxy

BUCKET = "drafts"
KEYS = {"AWS_ACCESS_KEY_ID": "testing-access-key", "AWS_SECRET_ACCESS_KEY": "testing-secret-value"}


class S3Store:
    scheme = "s3"
    gives_digests = True  # the listing carries an MD5 or SHA-256 per file
    client_env: dict[str, str] = {}
    bucket = BUCKET

    def __init__(self) -> None:
        from moto.server import ThreadedMotoServer

        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)

    def start(self) -> "S3Store":
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.direct_url = f"http://{host}:{port}"
        self.proxy = FaultProxy(self.direct_url).start()
        self._client().create_bucket(Bucket=self.bucket)
        return self

    def close(self) -> None:
        self.proxy.close()
        self._server.stop()

    def _client(self, checksums: bool = True):
        import boto3
        from botocore.config import Config

        # Without checksums: what a client older than botocore 1.36 wrote (the store keeps an MD5 ETag only).
        config = Config(request_checksum_calculation="when_supported" if checksums else "when_required")
        return boto3.client("s3", endpoint_url=self.direct_url, region_name="us-east-1", config=config, **_lower(KEYS))

    def env(self) -> dict[str, str]:
        return {"AWS_ENDPOINT_URL_S3": self.proxy.url, "AWS_REGION": "us-east-1", **KEYS, **self.client_env}

    def publish(
        self, prefix: str, files: dict[str, bytes], public: bool = False, checksum: str | None = "CRC32"
    ) -> str:
        """Objects as today's SDKs write them (with a CRC32 the store keeps), with another CRC, or without any."""
        client = self._client(checksum is not None)
        for name, data in files.items():
            extra = {"ACL": "public-read"} if public else {}
            if checksum is not None:
                extra["ChecksumAlgorithm"] = checksum
            client.put_object(Bucket=self.bucket, Key=f"{prefix}/{name}", Body=data, **extra)
        return f"s3://{self.bucket}/{prefix}"

    def publish_multipart(self, prefix: str, name: str, parts: list[bytes], algorithm: str = "CRC64NVME") -> str:
        """One object uploaded in parts with a full-object CRC: its ETag is `md5-N`, no MD5 of the bytes."""
        client, key = self._client(), f"{prefix}/{name}"
        upload = client.create_multipart_upload(
            Bucket=self.bucket, Key=key, ChecksumAlgorithm=algorithm, ChecksumType="FULL_OBJECT"
        )
        done = []
        for number, body in enumerate(parts, start=1):
            answer = client.upload_part(
                Bucket=self.bucket,
                Key=key,
                UploadId=upload["UploadId"],
                PartNumber=number,
                Body=body,
                ChecksumAlgorithm=algorithm,
            )
            done.append(
                {"PartNumber": number, "ETag": answer["ETag"], f"Checksum{algorithm}": answer[f"Checksum{algorithm}"]}
            )
        client.complete_multipart_upload(
            Bucket=self.bucket,
            Key=key,
            UploadId=upload["UploadId"],
            MultipartUpload={"Parts": done},
            ChecksumType="FULL_OBJECT",
        )
        return f"s3://{self.bucket}/{prefix}"

    def flip_byte(self, uri: str, name: str, offset: int) -> None:
        """Bit rot at rest: one stored byte changes, the ETag the store vouches for does not."""
        from moto.core import DEFAULT_ACCOUNT_ID
        from moto.s3.models import s3_backends

        prefix = uri.removeprefix(f"s3://{self.bucket}/")
        key = s3_backends[DEFAULT_ACCOUNT_ID]["aws"].get_object(self.bucket, f"{prefix}/{name}")
        etag = key.etag  # computed now and kept
        data = bytearray(key.value)
        data[offset] ^= 0x01
        key.value = bytes(data)
        assert key.etag == etag


class S3BotoStore(S3Store):
    """The same store, fetched through the fallback client."""

    client_env = {"NIM_S5CMD": "0"}
    bucket = "drafts-boto3"


def _lower(keys: dict[str, str]) -> dict[str, str]:
    return {"aws_access_key_id": keys["AWS_ACCESS_KEY_ID"], "aws_secret_access_key": keys["AWS_SECRET_ACCESS_KEY"]}
