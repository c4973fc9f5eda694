#!/usr/bin/env bash
# `make test`: two pytest sessions at once, one per core of the CI machine, split by the
# components a test needs (tests/conftest.py: lane_of):
#   lane connect  the integration tests on the Spark Connect server, the three-node racked
#                 cluster or the OAuth broker: each of those started once per run;
#   lane rest     the unit tests, and the integration tests of the classic launcher and of
#                 components of their own.
# The connect lane's output streams; the rest lane's is printed when both have ended, then
# the wall time of the whole; every module's time goes to .cache/test-times/<lane>.json.
# Fails when either session fails (pytest's 5, no tests, included). TESTS narrows both
# lanes to some paths (each lane runs its own share of them).
set -u
cd "$(dirname "$0")/../.."
py=${PY:-.venv/bin/python}
read -r -a paths <<< "${TESTS:-tests}"
started=$(date +%s)
rest_log=$(mktemp "${TMPDIR:-/tmp}/rest-lane.XXXXXX.log")
# Every module's time, per lane, for whoever looks for the next minute (git-ignored).
times=.cache/test-times
mkdir -p "$times"
"$py" -m pytest "${paths[@]}" --lane rest --durations=30 --module-times "$times/rest.json" \
  >"$rest_log" 2>&1 &
rest_pid=$!
"$py" -m pytest "${paths[@]}" --lane connect --durations=30 \
  --module-times "$times/connect.json"
connect_rc=$?
wait "$rest_pid"
rest_rc=$?
echo "=============================== lane rest ==============================="
cat "$rest_log"
rm -f "$rest_log"
elapsed=$(( $(date +%s) - started ))
printf 'make test: %d min %02d s for both lanes (connect exit %d, rest exit %d)\n' \
  $(( elapsed / 60 )) $(( elapsed % 60 )) "$connect_rc" "$rest_rc"
[ "$connect_rc" -eq 0 ] && [ "$rest_rc" -eq 0 ]
