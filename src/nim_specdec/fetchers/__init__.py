"""The fetchers: a source (hf://, ngc://, s3://, gs:// or a local path) made a local directory, downloaded once into
the shared cache, verified, never half-written.

The entry points are registry.get_fetcher (a scheme's fetcher, imported on use), download/materialize.py (what every
remote scheme goes through) and download/base.FetchContext (what a fetch is given). The sub-packages, lowest first
(each imports only its own and those above it in this list; the scheme packages, on one rank, never import each
other; none imports the modules directly in fetchers/). tests/contract/test_import_contract.py checks it, and that
each package's map names exactly its modules:

integrity/      is a file what the store says: digests, followed while the client writes, the tree checked
transfer/       a transfer kept in bounds: names and listings, rate and deadline, errors mapped, progress shown
volume/         the cache volume: its entries and markers, one downloader per entry, free space, what is resumed
download/       one source into the cache: the fetchers' contract, the job, the transfer in a killable child
hub/            hf:// on the Hugging Face Hub: the transfer, and which commit a branch or tag is served as
buckets/        s3:// and gs:// object stores: listings with the store's digests, boto3, s5cmd, google-cloud-storage
registry.py     scheme -> fetcher, each backend imported only when its scheme is used
context.py      what a fetch context says at a start: the shared-volume warning, and the loggers of a command
local.py        local directories: used where they are, never copied
ngc.py          ngc://ORG/[TEAM/]NAME:VERSION through ngcsdk's model registry client
"""
