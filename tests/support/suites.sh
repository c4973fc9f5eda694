#!/usr/bin/env bash
# `make test`: the unit suite runs beside the integration suite, each a pytest session of
# its own. The integration tests wait on brokers, clusters and the Connect server most of
# their time; the unit tests are the other core's work meanwhile. The integration
# session's output streams; the unit session's is printed when both have ended, then the
# wall time of the whole. Fails when either session fails (pytest's 5, no tests, included).
set -u
cd "$(dirname "$0")/../.."
py=${PY:-.venv/bin/python}
unit=${UNIT_TESTS:-tests/unit}
integration=${INTEGRATION_TESTS:-tests/integration}
started=$(date +%s)
unit_log=$(mktemp "${TMPDIR:-/tmp}/unit-tests.XXXXXX.log")
"$py" -m pytest "$unit" --durations=30 >"$unit_log" 2>&1 &
unit_pid=$!
"$py" -m pytest "$integration" --durations=30
integration_rc=$?
wait "$unit_pid"
unit_rc=$?
echo "================================ unit tests ================================"
cat "$unit_log"
rm -f "$unit_log"
elapsed=$(( $(date +%s) - started ))
printf 'make test: %d min %02d s for both suites (integration exit %d, unit exit %d)\n' \
  $(( elapsed / 60 )) $(( elapsed % 60 )) "$integration_rc" "$unit_rc"
[ "$integration_rc" -eq 0 ] && [ "$unit_rc" -eq 0 ]
