#!/usr/bin/env bash
# Installs, builds and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
# Headless Chromium renders the example reports in the unit tests
# (tests/browser/check_reports.sh); setup.sh installs it only when missing.
export RIDGELINE_EXTRA_PACKAGES="${RIDGELINE_EXTRA_PACKAGES:-} chromium"
bash scripts/setup.sh
# Every shipped spec file must pass `ridgeline check`.
./build/ridgeline check hardware_profiles/*.yaml models/*.yaml plans/*.yaml frameworks/*.yaml >/dev/null
(cd build && ctest -j2 --output-on-failure)
# The README's accuracy section, docs/accuracy.md and validation/residuals.json
# must be what validate-published gives now, byte for byte.
bash scripts/accuracy_table.sh --check
