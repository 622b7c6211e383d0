"""hf:// sources on the Hugging Face Hub (a scheme package: below the registry, beside buckets/, never importing it).

hf.py               the transfer through huggingface_hub's snapshot_download, and a revision resolved to its commit
hf_branch.py        what an hf:// source is served as at a start: a commit, chosen once, recorded
hf_choice.py        the rules of that choice, pure: follow the branch, keep the last commit, or refuse
branch_refs.py      which commit a branch or tag named when a launcher last asked the Hub, kept in the cache
prune_commits.py    the commits a branch has left removed: the source-cache half of `nim-specdec cache prune`
"""
