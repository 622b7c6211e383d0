"""s3:// and gs:// object stores (a scheme package: below the registry, beside hub/, never importing it).

s3.py                 s3:// through boto3's transfer manager, the listing with the store's checksums
s5cmd.py              s3:// through the s5cmd binary: the default when it is installed
s3_location.py        where an s3:// source lives: its endpoint (from the AWS variables), bucket and prefix
s3_redirects.py       a store's redirects, bounded at the root
s3_transfer_hooks.py  the hooks boto3's transfer manager is handed: each file's size and digest, its open bodies
gcs.py                gs:// through google-cloud-storage's transfer manager
"""
