#!/bin/sh
# Runs a command until it succeeds, at most ATTEMPTS times, waiting longer after each failure. Setup's
# downloads go through it: a package index that drops a connection mid-file (pip's "IncompleteRead") fails one
# try, not the whole CI run. Each try must be safe to repeat; pip, npm and apt-get download are.
# Usage: scripts/retry.sh ATTEMPTS COMMAND [ARG...]   (RETRY_DELAY_S: the first wait, 10 s by default)
set -u
if [ "$#" -lt 2 ]; then
  echo "retry.sh: usage: retry.sh ATTEMPTS COMMAND [ARG...]" >&2
  exit 2
fi
attempts=$1
shift
delay=${RETRY_DELAY_S:-10}
case $attempts in '' | *[!0-9]* | 0)
  echo "retry.sh: ATTEMPTS must be a whole number from 1, got '$attempts'" >&2
  exit 2
  ;;
esac
case $delay in '' | *[!0-9]*)
  echo "retry.sh: RETRY_DELAY_S must be a whole number of seconds, got '$delay'" >&2
  exit 2
  ;;
esac
try=1
while :; do
  "$@" && exit 0
  rc=$?
  if [ "$try" -ge "$attempts" ]; then
    echo "retry.sh: $1 failed $try times (last exit $rc); giving up" >&2
    exit "$rc"
  fi
  echo "retry.sh: $1 failed (exit $rc) on try $try of $attempts; trying again in ${delay} s" >&2
  sleep "$delay"
  try=$((try + 1))
  delay=$((delay * 2))
done
