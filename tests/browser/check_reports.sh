#!/usr/bin/env bash
# Renders capacity reports in headless Chromium and checks that a browser
# really shows them:
#   - the page loads: --dump-dom returns the document with its <main>;
#   - every chart <svg> of the file (data-chart="...") is in the DOM and has
#     marks carrying data- values;
#   - a chart that draws prediction intervals (data-interval="..." on its
#     <svg>, other than "none") has error bars (<line class="error-bar">) in
#     the DOM, and every error bar lies within its chart's viewBox;
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

# Error bars of a page's DOM that are missing or outside their chart, one
# line each: "missing CHART" or "outside CHART x2=1234".
error_bar_problems() {
  awk '
    function attr(line, name) {
      if (match(line, " " name "=\"[^\"]*\"")) return substr(line, RSTART + length(name) + 3, RLENGTH - length(name) - 4)
      return ""
    }
    /<svg[^>]* data-chart="/ {
      chart = attr($0, "data-chart")
      wanted[chart] = attr($0, "data-interval")
      split(attr($0, "viewBox"), vb, " ")
      w = vb[3] + 0; h = vb[4] + 0
      bars[chart] += 0
    }
    /<line class="error-bar"/ {
      bars[chart]++
      n = split("x1 y1 x2 y2", names, " ")
      for (i = 1; i <= n; i++) {
        v = attr($0, names[i])
        lim = (i % 2 == 1) ? w : h
        if (v == "" || v + 0 < 0 || v + 0 > lim) print "outside " chart " " names[i] "=" v
      }
    }
    END { for (c in bars) if (wanted[c] != "" && wanted[c] != "none" && bars[c] == 0) print "missing " c }
  ' "$1"
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
# Self-test: an error bar outside its chart, and a chart without the error
# bars it promises, must be reported.
cat >"$work/bars.html" <<'EOF'
<!DOCTYPE html><html><head><meta charset="utf-8"/><title>bars</title></head><body><main>
<svg xmlns="http://www.w3.org/2000/svg" data-chart="memory" data-interval="memory" width="100" height="50" viewBox="0 0 100 50">
<line class="error-bar" data-lo-bytes="1" x1="10.0" y1="20.0" x2="140.0" y2="20.0"/>
</svg>
<svg xmlns="http://www.w3.org/2000/svg" data-chart="time" data-interval="step" width="100" height="50" viewBox="0 0 100 50">
<rect class="time" data-time-s="1" x="0" y="0" width="10" height="10"/>
</svg>
</main></body></html>
EOF
run_browser "$work/bars" --dump-dom "file://$work/bars.html"
bar_test=$(error_bar_problems "$work/bars.out")
if ! echo "$bar_test" | grep -q '^outside memory x2=140' || ! echo "$bar_test" | grep -q '^missing time$'; then
  echo "check_reports: self-test failed: error bars outside a chart or missing from it were not detected ($bar_test)" >&2
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
  bar_errors=$(error_bar_problems "$out.dom.out")
  if [ -n "$bar_errors" ]; then problem "$html" "error bars: $(echo "$bar_errors" | head -3 | tr '\n' ';')"; fi
  bars=$(grep -c '<line class="error-bar"' "$out.dom.out" || true)
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
  [ $fail -eq 0 ] && echo "check_reports: $html: ok ($(echo "$charts" | wc -w) charts, $bars error bars, screenshot $(wc -c <"$out.png") bytes)"
done
if [ $fail -ne 0 ]; then
  exit 1
fi
echo "check_reports: ${#files[@]} reports passed"
