#!/usr/bin/env bash
# Regenerates tests/golden/<case>/expected.* from each case's args with the
# current build. Review the diff before committing: a changed number is a
# changed prediction.
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
