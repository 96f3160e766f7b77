#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ (clang, ASan + UBSan) into build-fuzz/
# and runs each for a bounded time: scripts/fuzz.sh [SECONDS] [TARGET...]
# (default 60 s per target, every target). Fails on any crash, leak, timeout,
# out-of-memory or sanitizer report; the input that caused it is copied to
# tests/fuzz_regressions/<target>/ (commit it: tests/unit/fuzz_regression_test.cpp
# replays it). Prints, per target, the time and the number of executions.
#
# Corpora start from the shipped files (hardware_profiles/, models/, plans/,
# tests/data/, tests/diagnostics/, the published-measurements file) and the
# saved regressions; what the fuzzer adds is kept in build-fuzz/corpus/ for the
# next local run. Installs clang and libFuzzer with apt-get when missing
# (RIDGELINE_CLANG_VERSION, default 16).
#
# The mutation seed is fixed (RIDGELINE_FUZZ_SEED, default 1; 0 picks a random
# one), so from the same corpus a run draws the same mutations in the same order
# until its time runs out: CI's run is repeatable, and a longer local run with
# the same seed covers what a shorter one tried. A clean clone's run is
# reproduced here by removing build-fuzz/corpus first.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

seconds=${1:-60}
fuzz_seed=${RIDGELINE_FUZZ_SEED:-1}
shift || true
case "$seconds" in ''|*[!0-9]*) echo "fuzz: SECONDS must be a whole number, got '$seconds'" >&2; exit 2 ;; esac

# ---- tools -----------------------------------------------------------------
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
apt_install() {
  echo "fuzz: installing $*"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$@"
}
# clang 16 or newer: clang 14 (Debian's default) rejects C++20 lambdas that
# capture structured bindings, which the sources use (GCC accepts them).
clang_version=${RIDGELINE_CLANG_VERSION:-16}
need=()
for p in "clang-$clang_version" "libclang-rt-$clang_version-dev" cmake make pkg-config libeigen3-dev \
         libyaml-cpp-dev libfmt-dev libcli11-dev nlohmann-json3-dev; do
  installed "$p" || need+=("$p")
done
[ ${#need[@]} -eq 0 ] || apt_install "${need[@]}"
CC="clang-$clang_version"
CXX="clang++-$clang_version"
fuzzer_lib="$($CC -print-resource-dir)/lib/linux/libclang_rt.fuzzer-x86_64.a"
[ -f "$fuzzer_lib" ] || { echo "fuzz: libFuzzer not found at $fuzzer_lib" >&2; exit 2; }

# ---- build -----------------------------------------------------------------
build=${RIDGELINE_FUZZ_DIR:-build-fuzz}
case "$build" in /*) ;; *) build="$root/$build" ;; esac  # absolute: fuzz_cli runs from the repository root
CC=$CC CXX=$CXX cmake -S fuzz -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"${RIDGELINE_JOBS:-2}"

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for t in hardware model hf_config plan measurements published cli; do
    [ -x "$build/fuzz_$t" ] && targets+=("$t")
  done
fi

# ---- corpora and dictionaries ----------------------------------------------
published_file=${RIDGELINE_PUBLISHED_FILE:-$root/validation/published.yaml}

seed() {  # seed TARGET FILE...: copies files into the target's corpus
  local t=$1; shift
  local f
  for f in "$@"; do [ -f "$f" ] && cp -f "$f" "$build/corpus/$t/seed-$(basename "$f")"; done
  return 0
}

prepare_corpus() {
  local t=$1 c="$build/corpus/$1"
  mkdir -p "$c"
  case "$t" in
    hardware) seed "$t" hardware_profiles/*.yaml ;;
    model) seed "$t" models/*.yaml ;;
    hf_config) seed "$t" tests/data/hf/*.json ;;
    plan) seed "$t" plans/*.yaml ;;
    measurements) seed "$t" fuzz/seeds/measurements/* tests/data/measurements/* cuda_validation/results/*.json ;;
    published)
      # One row per seed: the whole file is too large to mutate usefully.
      if [ -f "$published_file" ]; then
        awk -v dir="$c" '
          /^- id:/ { n++; file = sprintf("%s/seed-row-%03d.yaml", dir, n); print "schema_version: 1\nrows:" > file }
          n && /^(- |  )/ { print >> file }
          /^[a-z]/ && !/^- / { if (file) close(file); file = "" }
        ' "$published_file"
        find "$c" -name 'seed-row-*.yaml' -size -60c -delete
      fi
      seed "$t" tests/data/published/* ;;
    cli)
      # Every diagnostics case and a few good runs, one argument per line.
      local i=0 name args
      while IFS='|' read -r name args _; do
        case "$name" in '#'*|'') continue ;; esac
        i=$((i + 1))
        echo $args | tr ' ' '\n' > "$c/seed-case-$i"
      done < tests/diagnostics/cases.txt
      printf 'predict\n--dp\n8\n--zero\n3\n--global-batch\n64\n--format\njson' > "$c/seed-zero3"
      printf 'predict\n--model\nmixtral_8x7b\n--tp\n8\n--sp\n--ep\n8\n--dp\n8\n--format\ncsv' > "$c/seed-moe"
      printf 'predict\n--model\ntests/data/hf/qwen2_7b_config.json\n--recompute\nevery:4\n--pp\n4\n--vpp\n2\n--global-batch\n64' > "$c/seed-hf"
      printf 'predict\n--finetune\nqlora\n--lora-targets\nall\n--precision\nfp8\n--tokens\n15T' > "$c/seed-qlora"
      printf 'list\ngpus' > "$c/seed-list"
      printf 'check\nhardware_profiles/h100_sxm.yaml\nmodels/gpt3_125m.yaml\nplans/pretrain_8k.yaml' > "$c/seed-check"
      printf 'compare\n--vary\nprecision=bf16,fp8' > "$c/seed-compare"
      ;;
  esac
  # Hand-written malformed inputs in tests/diagnostics, by the flag that reads them.
  local flag
  case "$t" in hardware) flag=--gpu ;; model) flag=--model ;; plan) flag=--plan ;; *) flag="" ;; esac
  if [ -n "$flag" ]; then
    local f
    for f in $(grep -o -- "$flag tests/diagnostics/[a-z_]*\.yaml" tests/diagnostics/cases.txt | cut -d' ' -f2); do
      seed "$t" "$f"
    done
  fi
  seed "$t" tests/fuzz_regressions/"$t"/*
}

prepare_dict() {  # every key and quoted value of the seeds, plus units and flags
  local t=$1 d="$build/dict/$1.dict"
  mkdir -p "$build/dict"
  {
    cat "$build/corpus/$t"/seed-* 2>/dev/null | grep -o '^ *"\?[a-z_0-9]*"\?:' | tr -d ' ' | sort -u || true
    cat "$build/corpus/$t"/seed-* 2>/dev/null | grep -o '"[a-z_0-9]*":' | sort -u || true
    printf '%s\n' 'GiB' 'GB' 'MiB' 'TB/s' 'GB/s' 'TFLOP/s' 'PFLOP/s' 'GHz' 'us' 'ns' 'W' 'USD/h' \
      'true' 'false' 'null' '{' '}' '[' ']' '- ' '1e308' '-1' '0' '4294967296' '9223372036854775807' \
      '.nan' '.inf' '-.inf' '0x10' '&a' '*a' '!!str' '<<' '---' '...' \
      '65536' '1048576' '16777216' '67108864' '1073741824' '2147483647' '9e15' '1e300' '4e-324'
    if [ "$t" = cli ]; then
      grep -oh '"--[a-z0-9-]*' src/cli/*.cpp | tr -d '"' | sort -u
      printf '%s\n' predict compare list check gpus models h100_sxm a100_sxm_80gb llama3_8b mixtral_8x7b \
        bf16 fp8 fp16 fp32 tf32 selective full every:2 sqrt naive flash2 eager compiled xla lora qlora json csv table
    fi
  } | sed 's/\\/\\\\/g; s/"/\\"/g; s/.*/"&"/' | awk 'length($0) > 2' > "$d"
}

# ---- run -------------------------------------------------------------------
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:handle_abort=1:symbolize=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
symbolizer=$(command -v "llvm-symbolizer-$clang_version" || command -v llvm-symbolizer || true)
[ -n "$symbolizer" ] && export ASAN_SYMBOLIZER_PATH="$symbolizer"

status=0
summary=()
for t in "${targets[@]}"; do
  bin="$build/fuzz_$t"
  [ -x "$bin" ] || { echo "fuzz: no target '$t' (have: $(ls "$build" | grep '^fuzz_' | sed 's/fuzz_//' | tr '\n' ' '))" >&2; exit 2; }
  prepare_corpus "$t"
  prepare_dict "$t"
  art="$build/artifacts/$t"
  rm -rf "$art"; mkdir -p "$art"
  log="$build/logs/$t.log"; mkdir -p "$build/logs"
  echo "fuzz: $t for ${seconds} s ($(ls "$build/corpus/$t" | wc -l) corpus inputs)"
  start=$(date +%s)
  rc=0
  "$bin" -seed="$fuzz_seed" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$art/" -dict="$build/dict/$t.dict" "$build/corpus/$t" >"$log" 2>&1 || rc=$?
  elapsed=$(( $(date +%s) - start ))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2 || true)  # none when a seed crashes at once
  found=$(ls "$art" 2>/dev/null | grep -E '^(crash|leak|timeout|oom)-' || true)
  reported=$(grep -lE 'ERROR: (Address|Leak|UndefinedBehavior)Sanitizer|runtime error:|ridgeline fuzz finding|==ERROR: libFuzzer' "$log" || true)
  verdict=ok
  if [ $rc -ne 0 ] || [ -n "$found" ] || [ -n "$reported" ]; then
    verdict=FAILED
    status=1
    echo "fuzz: $t FAILED (exit $rc); log $log" >&2
    grep -E -A30 'ERROR: |runtime error:|ridgeline fuzz finding|deadly signal|Test unit written' "$log" | head -80 >&2 || true
    mkdir -p "tests/fuzz_regressions/$t"
    for a in $found; do
      known=""
      for r in tests/fuzz_regressions/"$t"/*; do
        [ -f "$r" ] && cmp -s "$r" "$art/$a" && known=$r
      done
      if [ -n "$known" ]; then
        echo "fuzz: still failing: $known; reproduce: $bin $root/$known" >&2
      else
        cp "$art/$a" "tests/fuzz_regressions/$t/$a"
        echo "fuzz: saved tests/fuzz_regressions/$t/$a; reproduce: $bin $root/tests/fuzz_regressions/$t/$a" >&2
      fi
    done
  fi
  summary+=("$(printf '%-13s %6s s %12s execs %9s exec/s  cov %-6s %s' "$t" "$elapsed" "${execs:-?}" "${rate:-?}" "${cov:-?}" "$verdict")")
done

echo "fuzz: summary"
printf '  %s\n' "${summary[@]}"
exit $status
