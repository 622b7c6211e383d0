"""Is a downloaded file what the store says it is (lowest of the fetchers' sub-packages; imports none of them).

digests.py          the digests a store vouches for (MD5, SHA-256, CRC32C, CRC64NVME...), computed over a file on disk
write_follower.py   a file digested while its client writes it, read back right behind the client
verify.py           the downloaded tree checked against the store's listing: names, sizes and digests (RemoteFile)
"""
