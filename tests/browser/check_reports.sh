#!/usr/bin/env bash
# Renders capacity reports in headless Chromium and checks that a browser
# really shows them:
#   - the page loads: --dump-dom returns the document with its <main>;
#   - every chart <svg> of the file (data-chart="...") is in the DOM and has
#     marks carrying data- values;
#   - Chromium logs no JavaScript or console error, no refused or failed
#     request (the pages have no scripts and fetch nothing; their
#     Content-Security-Policy forbids it);
#   - a 1280x2400 screenshot is written and is a PNG of non-trivial size.
# The file itself must reference nothing outside it: no <script>, no
# external src/href, no url(...) or @import.
#
# Usage: tests/browser/check_reports.sh [--require] [--screenshot-dir DIR] [FILE.html ...]
# Without files it checks reports/*.html. Without Chromium it prints
# "skipped" and exits 0 (77 with --require). A self-test first proves that a
# page with a JavaScript error is caught.
set -euo pipefail
cd "$(dirname "$0")/../.."

require=0
shot_dir=""
files=()
while [ $# -gt 0 ]; do
  case "$1" in
    --require) require=1 ;;
    --screenshot-dir) shot_dir=$2; shift ;;
    *) files+=("$1") ;;
  esac
  shift
done
if [ ${#files[@]} -eq 0 ]; then
  for f in reports/*.html; do [ -e "$f" ] && files+=("$f"); done
fi

browser=""
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null 2>&1; then browser=$(command -v "$b"); break; fi
done
if [ -z "$browser" ]; then
  echo "check_reports: skipped (no chromium installed; scripts/test.sh installs it)"
  [ $require -eq 1 ] && exit 77
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Runs the browser on a page with the flags every check uses; $1 = output
# prefix, then extra flags and the URL. Stdout to $1.out, stderr to $1.err.
run_browser() {
  local prefix=$1
  shift
  local profile
  profile=$(mktemp -d "$work/profile.XXXXXX")
  timeout 60 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync --user-data-dir="$profile" \
    --enable-logging=stderr --v=0 "$@" >"$prefix.out" 2>"$prefix.err" || true
}

# JavaScript errors, console messages and refused or failed loads, as Chromium logs them.
page_errors() {
  grep -E 'CONSOLE|Uncaught|SyntaxError|ReferenceError|TypeError|Refused to|net::ERR_|Failed to load resource' "$1" || true
}

fail=0
problem() {
  echo "check_reports: $1: $2" >&2
  fail=1
}

# Self-test: a page with a script error must be reported.
cat >"$work/bad.html" <<'EOF'
<!DOCTYPE html><html><head><meta charset="utf-8"/><title>bad</title></head>
<body><p>bad</p><script>console.error("self-test console error"); undefined_function_of_the_self_test();</script></body></html>
EOF
run_browser "$work/bad" --dump-dom "file://$work/bad.html"
if [ -z "$(page_errors "$work/bad.err")" ]; then
  echo "check_reports: self-test failed: a JavaScript error on a page was not detected in Chromium's log" >&2
  exit 1
fi

for html in "${files[@]}"; do
  name=$(basename "$html" .html)
  url="file://$(realpath "$html")"
  out="$work/$name"

  # The file references nothing outside itself.
  if grep -qiE '<script|@import|url\([^#]' "$html"; then problem "$html" "has a script, @import or a url() outside the page"; fi
  if grep -oE '(src|href)="[^"]*"' "$html" | grep -qE '="([a-z]+:|//)'; then
    problem "$html" "references an external resource: $(grep -oE '(src|href)="[^"]*"' "$html" | grep -E '="([a-z]+:|//)' | head -1)"
  fi

  run_browser "$out.dom" --dump-dom "$url"
  if ! grep -q '<main>' "$out.dom.out" || ! grep -q '</html>' "$out.dom.out"; then
    problem "$html" "the page did not load (no <main> in --dump-dom)"
  fi
  charts=$(grep -oE 'data-chart="[a-z]+"' "$html" | sed -E 's/data-chart="([a-z]+)"/\1/' | sort -u)
  if [ -z "$charts" ]; then problem "$html" "has no chart"; fi
  for chart in $charts; do
    marks=$(awk -v want="$chart" '
      index($0, "data-chart=\"" want "\"") { inside = 1; next }
      inside && /<\/svg>/ { inside = 0 }
      inside && /<(circle|rect|line|path|g)[^>]* data-[a-z-]+="/ { n++ }
      END { print n + 0 }' "$out.dom.out")
    if [ "$marks" -eq 0 ]; then problem "$html" "chart '$chart' is missing from the DOM or has no data marks"; fi
  done
  errors=$(page_errors "$out.dom.err")
  if [ -n "$errors" ]; then problem "$html" "Chromium logged errors while loading it: $(echo "$errors" | head -3)"; fi

  run_browser "$out.shot" --screenshot="$out.png" --window-size=1280,2400 "$url"
  if [ ! -s "$out.png" ]; then
    problem "$html" "no screenshot was written"
  else
    size=$(wc -c <"$out.png")
    signature=$(head -c 8 "$out.png" | od -An -tx1 | tr -d ' \n')
    dims=$(od -An -tu1 -j16 -N8 "$out.png" | awk '{ printf "%dx%d", $1*16777216+$2*65536+$3*256+$4, $5*16777216+$6*65536+$7*256+$8 }')
    [ "$signature" = "89504e470d0a1a0a" ] || problem "$html" "the screenshot is not a PNG"
    [ "$dims" = "1280x2400" ] || problem "$html" "the screenshot is $dims, expected 1280x2400"
    [ "$size" -gt 50000 ] || problem "$html" "the screenshot is only $size bytes (a blank page?)"
    if [ -n "$shot_dir" ]; then cp "$out.png" "$shot_dir/$name.png"; fi
  fi
  errors=$(page_errors "$out.shot.err")
  if [ -n "$errors" ]; then problem "$html" "Chromium logged errors while rendering it: $(echo "$errors" | head -3)"; fi
  [ $fail -eq 0 ] && echo "check_reports: $html: ok ($(echo "$charts" | wc -w) charts, screenshot $(wc -c <"$out.png") bytes)"
done
if [ $fail -ne 0 ]; then
  exit 1
fi
echo "check_reports: ${#files[@]} reports passed"
