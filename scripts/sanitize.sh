#!/usr/bin/env bash
# Builds Ridgeline with AddressSanitizer + UndefinedBehaviorSanitizer into
# build-asan/ (RIDGELINE_SANITIZE=ON, no benchmarks, no CUDA) and runs the whole
# test suite there, including the CLI the tests spawn. Fails on a test failure
# or on any sanitizer report, also one from a child process whose exit status a
# test does not look at: reports go to build-asan/sanitizer-logs/, which must
# stay empty.
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${RIDGELINE_ASAN_DIR:-build-asan}
# -g1: line tables only, which is all a report's file:line needs, at less
# compile and link time than full debug information.
RIDGELINE_BUILD_DIR="$build_dir" \
RIDGELINE_CMAKE_ARGS="-DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DRIDGELINE_SANITIZE=ON -DRIDGELINE_BUILD_BENCH=OFF -DRIDGELINE_BUILD_CUDA=OFF" \
  bash scripts/setup.sh

log_dir="$PWD/$build_dir/sanitizer-logs"
rm -rf "$log_dir"
mkdir -p "$log_dir"
# exitcode 99: a sanitizer failure must not read as "does not fit" (1) or bad input (2).
common="exitcode=99:log_path=$log_dir/report:print_summary=1"
export ASAN_OPTIONS="$common:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1"
export UBSAN_OPTIONS="$common:print_stacktrace=1:halt_on_error=1"
export LSAN_OPTIONS="$common"

status=0
start=$(date +%s)
(cd "$build_dir" && ctest -j"${RIDGELINE_JOBS:-2}" --output-on-failure) || status=$?
echo "sanitize: ctest finished in $(( $(date +%s) - start )) s with status $status"

reports=$(find "$log_dir" -type f | sort)
if [ -n "$reports" ]; then
  echo "sanitize: sanitizer reports:" >&2
  for r in $reports; do echo "== $r" >&2; cat "$r" >&2; done
  status=1
fi
[ $status -eq 0 ] && echo "sanitize: ok (ASan + UBSan, no reports)"
exit $status
