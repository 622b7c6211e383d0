"""Files, safely: regular files only (no links, no devices), outputs written whole, the trust rules of a shared
cache (who may write a folder) and disk usage. Imports only errors and text."""
