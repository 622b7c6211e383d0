"""A transfer kept in bounds, whatever its client: imports none of the other sub-packages.

safety.py       names that would escape the destination, clashing names, and listings without end
rate_guard.py   every download under an overall deadline and a minimum rate
error_map.py    each backend's table from its library's exceptions to ours: retried, or one line and an exit
progress.py     download progress: a bar on a terminal, otherwise a log line with bytes, rate and ETA
"""
