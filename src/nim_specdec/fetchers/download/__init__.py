"""One source into the cache: imports integrity/, transfer/ and volume/; every scheme package builds on it.

base.py               the fetchers' contract: FetchContext (what a fetch is given) and Fetcher
materialize.py        download once: lock, temporary folder, verify, atomic rename, marker last (Job, CachedFetcher)
guarded_transfer.py   a library's transfer in a fresh child process under the rate guard, killable
child_backend.py      a backend whose library transfers in that child, started before the listing
"""
