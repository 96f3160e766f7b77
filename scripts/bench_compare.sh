#!/usr/bin/env bash
# Runs the same benchmarks from two builds' ridgeline_bench, interleaved
# (base, new, base, new, ...) so that both see the same machine load, and
# prints the median of each side's rounds side by side: CPU time, wall time,
# the new/base CPU-time ratio, the same ratio of each side's fastest round
# (on a shared machine whose speed drifts, the least disturbed figure) and
# allocs_per_eval.
#
#   scripts/bench_compare.sh BASE_BUILD_DIR NEW_BUILD_DIR [FILTER]
#
# FILTER is a --benchmark_filter regex (default: the Llama-3-70B-on-H100
# predict evaluation). ROUNDS (default 5) sets the rounds per side;
# BENCH_MIN_TIME (default 0.5, seconds) each run's --benchmark_min_time;
# BENCH_CPU, when set, pins both programs to that core with taskset.
# A base build made before allocs_per_eval existed shows "-" there.
set -euo pipefail

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  echo "usage: scripts/bench_compare.sh BASE_BUILD_DIR NEW_BUILD_DIR [FILTER]" >&2
  exit 2
fi
base=$(realpath "$1")/ridgeline_bench
new=$(realpath "$2")/ridgeline_bench
filter=${3:-BM_PredictLlama3_70B_H100}
rounds=${ROUNDS:-5}
min_time=${BENCH_MIN_TIME:-0.5}
for b in "$base" "$new"; do
  if [ ! -x "$b" ]; then
    echo "bench_compare: $b not found (build the ridgeline_bench target)" >&2
    exit 2
  fi
done
pin=()
[ -n "${BENCH_CPU:-}" ] && pin=(taskset -c "$BENCH_CPU")

rows=$(mktemp)
trap 'rm -f "$rows"' EXIT
# One benchmark's CSV -> "side<TAB>name<TAB>cpu<TAB>real<TAB>unit<TAB>allocs" rows.
# One at a time: the CSV reporter wants the same counters in every row.
# Each build runs from its own source tree (CMakeCache.txt's
# CMAKE_HOME_DIRECTORY): a program reads frameworks/ relative to where it runs.
src_of() { sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$(dirname "$1")/CMakeCache.txt"; }
base_src=$(src_of "$base")
new_src=$(src_of "$new")
run() {
  local side=$1 bin=$2 name=$3 dir
  dir=$([ "$side" = base ] && echo "$base_src" || echo "$new_src")
  (cd "${dir:-.}" && "${pin[@]}" "$bin" --benchmark_filter="^$(printf '%s' "$name" | sed 's/[][\\.^$*+?(){}|]/\\&/g')\$" \
    --benchmark_min_time="$min_time" --benchmark_format=csv 2>/dev/null) |
    awk -F, -v side="$side" '
      /^name,/ { gsub(/"/, ""); for (i = 1; i <= NF; ++i) col[$i] = i; next }
      col["name"] && $1 ~ /^"/ {
        gsub(/"/, "", $1)
        a = ("allocs_per_eval" in col) ? $col["allocs_per_eval"] : "-"
        if (a == "") a = "-"
        printf "%s\t%s\t%s\t%s\t%s\t%s\n", side, $1, $col["cpu_time"], $col["real_time"], $col["time_unit"], a
      }' >>"$rows"
}
mapfile -t names < <("$new" --benchmark_list_tests --benchmark_filter="$filter" 2>/dev/null)
for ((r = 1; r <= rounds; ++r)); do
  for n in "${names[@]}"; do
    run base "$base" "$n"
    run new "$new" "$n"
  done
done
if [ ! -s "$rows" ]; then
  echo "bench_compare: no benchmark matched '$filter'" >&2
  exit 1
fi

echo "bench_compare: $rounds interleaved rounds per side, medians; base=$1 new=$2"
awk -F'\t' '
  function median(key, n,   i, j, t, v) {
    n = cnt[key]
    for (i = 1; i <= n; ++i) v[i] = val[key, i]
    for (i = 2; i <= n; ++i) for (j = i; j > 1 && v[j - 1] > v[j]; --j) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
  }
  function minimum(key,   i, m) {
    m = val[key, 1]
    for (i = 2; i <= cnt[key]; ++i) if (val[key, i] < m) m = val[key, i]
    return m
  }
  function add(key, x) { val[key, ++cnt[key]] = x }
  {
    if (!($2 in seen)) { seen[$2] = 1; order[++names] = $2 }
    add($1 SUBSEP $2 SUBSEP "cpu", $3); add($1 SUBSEP $2 SUBSEP "real", $4)
    unit[$2] = $5; allocs[$1 SUBSEP $2] = $6
  }
  END {
    printf "%-46s %13s %13s %8s %8s %13s %13s  %s\n", "benchmark", "base cpu", "new cpu", "new/base", "min/min", "base wall", "new wall", "allocs/eval base|new"
    for (k = 1; k <= names; ++k) {
      b = order[k]; u = unit[b]
      bc = median("base" SUBSEP b SUBSEP "cpu"); nc = median("new" SUBSEP b SUBSEP "cpu")
      br = median("base" SUBSEP b SUBSEP "real"); nr = median("new" SUBSEP b SUBSEP "real")
      ba = "-"; na = "-"
      if (("base" SUBSEP b) in allocs) ba = allocs["base" SUBSEP b]
      if (("new" SUBSEP b) in allocs) na = allocs["new" SUBSEP b]
      bm = minimum("base" SUBSEP b SUBSEP "cpu"); nm = minimum("new" SUBSEP b SUBSEP "cpu")
      printf "%-46s %10.1f %-2s %10.1f %-2s %8.3f %8.3f %10.1f %-2s %10.1f %-2s  %s|%s\n", b, bc, u, nc, u, (bc > 0 ? nc / bc : 0), (bm > 0 ? nm / bm : 0), br, u, nr, u, ba, na
    }
  }' "$rows"
