#!/usr/bin/env bash
# Regenerates tests/golden/<case>/expected.* from each case's args with the
# current build. Review the diff before committing: a changed number is a
# changed prediction. The search cases (search_*) hold the README's searches;
# their timing fields (seconds, threads, evaluated_per_s) are not compared
# (tests/unit/cli_test.cpp), and tests/unit/search_equivalence_test.cpp checks
# the same searches against engine::evaluate, whatever the constants.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${RIDGELINE_BIN:-build/ridgeline}
for dir in tests/golden/*/; do
  args=$(cat "$dir/args")
  ext=json
  case "$args" in *"--format csv"*) ext=csv ;; *"--format table"*|compare*|*"report "*) ext=txt ;; esac
  case "$args" in *"--format json"*) ext=json ;; esac
  set +e
  # shellcheck disable=SC2086
  "$bin" $args > "$dir/expected.$ext"
  rc=$?
  set -e
  [ $rc -le 1 ] || { echo "regen_golden: $dir failed with status $rc" >&2; exit 1; }
  echo "$dir -> expected.$ext"
done
