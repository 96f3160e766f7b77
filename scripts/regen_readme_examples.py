#!/usr/bin/env python3
"""Reruns every `$ build/ridgeline ...` command shown in README.md's (and
docs/examples.md's and docs/commands.md's) code
blocks and replaces the output printed under it with what the current build
prints. Where the README shows only part of an output (a line "..." between
the head and the tail), the same number of head and tail lines is kept.
Commands spelt `$ ridgeline ...` run build/ridgeline too. Review the diff
before committing: a changed number is a changed prediction.

    scripts/regen_readme_examples.py            # rewrite README.md
    scripts/regen_readme_examples.py --check    # exit 1 when an example is stale

Timings printed by `search` (seconds, layouts per second) change from run to
run; --check ignores lines that mention them. RIDGELINE_BIN overrides
build/ridgeline. A developer's tool (needs python3); the tests do not run it.
"""
import os
import re
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("RIDGELINE_BIN", os.path.join(ROOT, "build", "ridgeline"))
TIMING = re.compile(r"evaluated/s|evaluations/s|layouts/s|\d s on \d+ threads?|\bin \d+(\.\d+)? ?s\b")


def run(command):
    args = shlex.split(command)
    if args and args[0] in ("build/ridgeline", "ridgeline"):
        args[0] = BIN
    r = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
    return r.stdout.rstrip("\n").split("\n") if r.stdout else []


def regenerate(lines):
    out, i, n = [], 0, len(lines)
    in_block = False
    while i < n:
        line = lines[i]
        if line.startswith("```"):
            in_block = not in_block
            out.append(line)
            i += 1
            continue
        if not (in_block and line.startswith("$ ") and "ridgeline " in line):
            out.append(line)
            i += 1
            continue
        # The command, with its backslash continuations.
        cmd_lines = [line]
        while cmd_lines[-1].rstrip().endswith("\\") and i + 1 < n:
            i += 1
            cmd_lines.append(lines[i])
        i += 1
        command = " ".join(l.rstrip().rstrip("\\").strip() for l in cmd_lines)[2:]
        # Its printed output: up to the next command or the end of the block.
        old = []
        while i < n and not lines[i].startswith("```") and not lines[i].startswith("$ "):
            old.append(lines[i])
            i += 1
        new = run(command)
        if "..." in old:
            cut = old.index("...")
            head, tail = cut, len(old) - cut - 1
            new = new[:head] + ["..."] + (new[len(new) - tail:] if tail else [])
        out.extend(cmd_lines)
        out.extend(new)
    return out


# The documents whose examples are kept true.
FILES = ["README.md", "docs/examples.md", "docs/commands.md"]


def main():
    check = "--check" in sys.argv[1:]
    status = 0
    for name in FILES:
        path = os.path.join(ROOT, name)
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        new = regenerate(lines)
        if check:
            stale = [(a, b) for a, b in zip(lines, new) if a != b and not (TIMING.search(a) and TIMING.search(b))]
            if len(lines) != len(new) or stale:
                for a, b in stale[:10]:
                    print(f"- {a}\n+ {b}")
                print(f"{name}: examples are stale: run scripts/regen_readme_examples.py", file=sys.stderr)
                status = 1
            continue
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(new))
        print(f"rewrote {name}'s examples")
    return status


if __name__ == "__main__":
    sys.exit(main())
