#!/usr/bin/env python3
"""`compactd prepare` and `compactd compact` (no model: the extractive summary) on one
generated pi session of 200,000 short messages: time and peak RSS of each, and the ratios
issue 39 sets (compact ≤ 3× prepare's time, compact's RSS ≤ 3× the file, prepare's ≤ 2×).

    bash bench/cli-scale.sh                      # builds, generates, runs, prints the table
    python3 bench/cli_scale.py --bin target/release/compactd [--messages N] [--repeat R]
        [--check] [--json]

The session is bench/scaling.py's (user, assistant with a read, its result, assistant;
rules and errors sprinkled in), written once to target/bench-data/. Each command runs
`--repeat` times (default 3) as its own process; the table shows the median time and the
largest peak RSS (`wait4`'s ru_maxrss; a spawned child inherits its parent's peak, so this
script never holds a session or an answer). --check exits 1 when a ratio is over its bound.
Standard library only.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scaling import pi_entries  # noqa: E402

BOUNDS = {"compact/prepare time": 3.0, "compact RSS/file": 3.0, "prepare RSS/file": 2.0}


def session_file(root, n):
    path = os.path.join(root, "target", "bench-data", f"cli-scale-{n}.jsonl")
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            for e in pi_entries(n):
                f.write(json.dumps(e, separators=(",", ":")))
                f.write("\n")
        os.replace(tmp, path)
    return path


def measure(argv, repeat):
    times, peaks = [], []
    for _ in range(repeat):
        # wait4 gives this child's own rusage (its peak RSS), which subprocess does not.
        start = time.perf_counter()
        pid = os.posix_spawn(argv[0], argv, dict(os.environ), file_actions=[
            (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
            (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
        ])
        _pid, status, usage = os.wait4(pid, 0)
        times.append(time.perf_counter() - start)
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"{' '.join(argv)} failed with status {os.waitstatus_to_exitcode(status)}")
        peaks.append(usage.ru_maxrss * 1024)  # KiB on Linux
    return statistics.median(times), max(peaks)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = session_file(root, a.messages)
    size = os.path.getsize(path)
    binary = os.path.abspath(a.bin)
    prep_t, prep_rss = measure([binary, "prepare", path], a.repeat)
    comp_t, comp_rss = measure([binary, "compact", path], a.repeat)
    # Checked once that both commands answer JSON, in a child: Linux carries a parent's
    # peak RSS into a spawned child's ru_maxrss, so this process must never hold an answer
    # (it did, and the figures were this script's peak, not compactd's).
    for cmd in ("prepare", "compact"):
        with tempfile.TemporaryFile() as out:
            subprocess.run([binary, cmd, path], stdout=out, check=True)
            out.seek(0)
            subprocess.run([sys.executable, "-c", "import json, sys; json.load(sys.stdin)"],
                           stdin=out, check=True)
    ratios = {
        "compact/prepare time": comp_t / prep_t,
        "compact RSS/file": comp_rss / size,
        "prepare RSS/file": prep_rss / size,
    }
    mib = 1024 * 1024
    if a.json:
        print(json.dumps({"messages": a.messages, "fileBytes": size,
                          "prepare": {"seconds": prep_t, "peakRssBytes": prep_rss},
                          "compact": {"seconds": comp_t, "peakRssBytes": comp_rss},
                          "ratios": ratios}, indent=2))
    else:
        print(f"session: {a.messages:,} messages, {size / mib:.1f} MiB ({path})")
        print()
        print("| | time | peak RSS | RSS / file size |")
        print("|---|---|---|---|")
        print(f"| `compactd prepare` | {prep_t:.2f} s | {prep_rss / mib:.0f} MiB | {prep_rss / size:.1f}× |")
        print(f"| `compactd compact` (extractive) | {comp_t:.2f} s | {comp_rss / mib:.0f} MiB | {comp_rss / size:.1f}× |")
        print()
        print(f"compact / prepare time: {ratios['compact/prepare time']:.1f}× (bound 3×)")
    over = [k for k, v in ratios.items() if v > BOUNDS[k]]
    if a.check and over:
        sys.exit("over the bound: " + ", ".join(f"{k} {ratios[k]:.2f} > {BOUNDS[k]}" for k in over))


if __name__ == "__main__":
    main()
