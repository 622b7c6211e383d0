"""The cache volume under NIM_CACHE_PATH, which other pods may share: imports integrity/ and transfer/ only.

cache.py        the cache's layout, entry names, completion markers, and the trust rule an entry passes to be used
entry_lock.py   one downloader per cache entry, across processes and hosts: an OS file lock per entry
disk_space.py   the disk pre-flight: a download starts only when the volume can hold what is still to fetch
resume.py       an interrupted download resumed from the files on the volume, verified before they are trusted
"""
