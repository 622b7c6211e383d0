"""Files, safely: regular files only (no links, no devices), outputs written whole, the trust rules of a shared
cache (who may write a folder), disk usage, and the capture file format. Imports only errors and text."""
