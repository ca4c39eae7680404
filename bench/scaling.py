#!/usr/bin/env python3
"""Time per message of every route at 2k, 20k and 200k messages: is the cost linear?

Starts the release server (limits raised so 200k messages fit), posts generated sessions
of short messages to each route, prints a table of milliseconds and the per-message ratios
(20k/2k and 200k/20k; linear is 1, the ceiling is 2), and draws the curves as an SVG.

    bash bench/scaling.sh                       # builds, runs, writes docs/scaling.svg
    python3 bench/scaling.py --bin target/release/compactd --sizes 2000,20000 --check

--check exits 1 when a ratio is over 2. Standard library only.
"""

import argparse
import http.client
import json
import math
import os
import random
import socket
import subprocess
import sys
import time

WORDS = (
    "alpha beta gamma delta file test build error config parser server client cache "
    "token module route deploy schema index query"
).split()


def sentence(r):
    return " ".join(r.choice(WORDS) for _ in range(r.randint(5, 14)))


def usage():
    return {
        "input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }


def pi_entries(n, seed=7):
    """A pi v3 session of n messages: user, assistant with a read, its result, assistant;
    every tenth user message states a rule, every twentieth tool result is an error."""
    r = random.Random(seed)
    entries = [{"type": "session", "version": 3, "id": "s",
                "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}]
    parent = None
    for i in range(n):
        k = i % 4
        if k == 0:
            text = sentence(r)
            if i % 40 == 0:
                text = f"From now on never touch {r.choice(WORDS)} {i}. {text}"
            msg = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": i}
        elif k == 1:
            msg = {"role": "assistant", "content": [
                {"type": "text", "text": sentence(r)},
                {"type": "toolCall", "id": f"c{i}", "name": "read",
                 "arguments": {"path": f"src/{r.choice(WORDS)}.rs"}}],
                "api": "x", "provider": "x", "model": "m", "usage": usage(),
                "stopReason": "toolUse", "timestamp": i}
        elif k == 2:
            msg = {"role": "toolResult", "toolCallId": f"c{i - 1}", "toolName": "read",
                   "content": [{"type": "text", "text": sentence(r)}],
                   "isError": i % 80 == 2, "timestamp": i}
        else:
            msg = {"role": "assistant", "content": [{"type": "text", "text": "Decided to " + sentence(r)}],
                   "api": "x", "provider": "x", "model": "m", "usage": usage(),
                   "stopReason": "stop", "timestamp": i}
        eid = f"e{i:07x}"
        entries.append({"type": "message", "id": eid, "parentId": parent,
                        "timestamp": "2026-01-01T00:00:00.000Z", "message": msg})
        parent = eid
    return entries


def hermes_messages(n, seed=3):
    r = random.Random(seed)
    msgs = [{"role": "system", "content": "You are helpful."}]
    for i in range(n):
        k = i % 4
        if k == 0:
            msgs.append({"role": "user", "content": sentence(r)})
        elif k == 1:
            msgs.append({"role": "assistant", "content": sentence(r), "tool_calls": [
                {"id": f"c{i}", "type": "function", "function": {
                    "name": "read_file",
                    "arguments": json.dumps({"path": f"src/{r.choice(WORDS)}.py"})}}]})
        elif k == 2:
            msgs.append({"role": "tool", "tool_call_id": f"c{i - 1}", "content": sentence(r)})
        else:
            msgs.append({"role": "assistant", "content": sentence(r)})
    return msgs


class Server:
    def __init__(self, binary):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        env = {
            "PATH": os.environ.get("PATH", ""),
            "COMPACTD_LISTEN": f"127.0.0.1:{self.port}",
            "COMPACTD_MAX_BODY_BYTES": str(1 << 30),
            "COMPACTD_MAX_ENTRIES": "1000000",
            "COMPACTD_REQUEST_TIMEOUT_SECS": "3600",
            "COMPACTD_LOG": "warn",
        }
        self.proc = subprocess.Popen([binary, "serve"], env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(200):
            try:
                if self.request("GET", "/healthz")[0] == 200:
                    return
            except OSError:
                time.sleep(0.05)
        raise SystemExit("scaling: compactd did not start")

    def request(self, method, path, body=None, content_type="application/json"):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=3600)
        headers = {"content-type": content_type} if body is not None else {}
        conn.request(method, path, body=body, headers=headers)
        res = conn.getresponse()
        data = res.read()
        conn.close()
        return res.status, data

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


# The verbatim tail pi keeps is a fixed number of tokens (20,000 by default): 40 % of a
# 2,000-message session of short messages, 4 % of a 20,000-message one, so per input message
# a summarizing route would look dearer at 20k only because it summarizes more of it. A tail
# of 2,000 tokens keeps that share under 4 % at every size.
KEEP = "?keepRecentTokens=2000"


def bodies(server, n):
    """(route label, path, body, content type, messages worked on) for a session of n
    messages. A summarizer route works on the messages its prompt holds: the part of the
    session that is summarized, not the part kept verbatim."""
    entries = pi_entries(n)
    jsonl = ("\n".join(json.dumps(e) for e in entries) + "\n").encode()
    status, prepared = server.request("POST", "/v1/prepare" + KEEP, jsonl, "application/x-ndjson")
    if status != 200:
        raise SystemExit(f"scaling: prepare answered {status}: {prepared[:300]!r}")
    prepared = json.loads(prepared)
    req = prepared["requests"][0]
    summarized = len(prepared["messagesToSummarize"])
    remote = json.dumps({"systemPrompt": req["systemPrompt"], "prompt": req["prompt"]}).encode()
    chat = json.dumps({"messages": [
        {"role": "system", "content": req["systemPrompt"]},
        {"role": "user", "content": req["prompt"]}]}).encode()
    branch = json.dumps({"entries": entries, "oldLeafId": entries[-1]["id"],
                         "targetId": entries[1]["id"]}).encode()
    hermes = json.dumps({"messages": hermes_messages(n), "contextLength": 8000}).encode()
    nd = "application/x-ndjson"
    return [
        ("prepare", "/v1/prepare" + KEEP, jsonl, nd, n),
        ("compact", "/v1/compact" + KEEP, jsonl, nd, n),
        ("compact, per summarized message", "/v1/compact" + KEEP, jsonl, nd, summarized),
        ("compact dry run", "/v1/compact" + KEEP + "&dryRun=true", jsonl, nd, n),
        ("prune", "/v1/prune", jsonl, nd, n),
        ("branch-summary", "/v1/branch-summary", branch, "application/json", n),
        ("summarize (remote body)", "/v1/summarize", remote, "application/json", summarized),
        ("chat/completions", "/v1/chat/completions", chat, "application/json", summarized),
        ("hermes/compress", "/v1/hermes/compress", hermes, "application/json", n),
        ("hermes/prepare", "/v1/hermes/prepare", hermes, "application/json", n),
        ("inspect/outline", "/v1/inspect/outline" + KEEP, jsonl, nd, n),
    ]


def timed(server, path, body, content_type, repeat):
    best = math.inf
    for _ in range(repeat):
        start = time.perf_counter()
        status, data = server.request("POST", path, body, content_type)
        elapsed = time.perf_counter() - start
        if status != 200:
            raise SystemExit(f"scaling: {path} answered {status}: {data[:300]!r}")
        best = min(best, elapsed)
    return best * 1000


COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",
          "#bcbd22", "#7f7f7f"]


def svg(results, sizes):
    """Log-log curves: messages on x, milliseconds on y, one line per route."""
    w, h, left, right, top, bottom = 760, 440, 70, 230, 30, 50
    ms = [v for r in results.values() for v in r.values()]
    lo, hi = math.floor(math.log10(max(min(ms), 0.1))), math.ceil(math.log10(max(ms)))
    x0, x1 = math.log10(sizes[0]), math.log10(sizes[-1])

    def px(n):
        return left + (math.log10(n) - x0) / max(x1 - x0, 1e-9) * (w - left - right)

    def py(v):
        return top + (hi - math.log10(max(v, 0.1))) / max(hi - lo, 1) * (h - top - bottom)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{left}" y="18" font-size="14">compactd: time per request by session '
           f'length (log-log; a slope of 1 is linear)</text>']
    for d in range(lo, hi + 1):
        y = py(10 ** d)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{w - right}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 8}" y="{y + 4:.1f}" text-anchor="end">{10 ** d:g} ms</text>')
    for n in sizes:
        x = px(n)
        out.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{h - bottom}" stroke="#ddd"/>')
        out.append(f'<text x="{x:.1f}" y="{h - bottom + 18}" text-anchor="middle">{n:,}</text>')
    out.append(f'<text x="{(left + w - right) / 2:.0f}" y="{h - 10}" text-anchor="middle">messages</text>')
    for i, (route, by_size) in enumerate(results.items()):
        color = COLORS[i % len(COLORS)]
        pts = " ".join(f"{px(n):.1f},{py(v):.1f}" for n, v in sorted(by_size.items()))
        out.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="2"/>')
        for n, v in by_size.items():
            out.append(f'<circle cx="{px(n):.1f}" cy="{py(v):.1f}" r="3" fill="{color}"/>')
        ly = top + 20 + i * 20
        out.append(f'<line x1="{w - right + 15}" y1="{ly - 4}" x2="{w - right + 35}" y2="{ly - 4}" '
                   f'stroke="{color}" stroke-width="2"/>')
        out.append(f'<text x="{w - right + 40}" y="{ly}">{route}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release/compactd")
    ap.add_argument("--sizes", default="2000,20000,200000")
    ap.add_argument("--svg", default="docs/scaling.svg")
    ap.add_argument("--check", action="store_true", help="exit 1 when a ratio is over 2")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    server = Server(args.bin)
    results = {}
    try:
        for n in sizes:
            for route, path, body, ct, units in bodies(server, n):
                # Small sizes take milliseconds: the best of more runs.
                repeat = 7 if n <= 2000 else 3 if n <= 20000 else 1
                ms = timed(server, path, body, ct, repeat)
                results.setdefault(route, {})[n] = (ms, units)
                print(f"{route:32} {n:>7} messages {ms:10.1f} ms", file=sys.stderr)
    finally:
        server.stop()
    head = "| route | " + " | ".join(f"{n:,} msgs" for n in sizes) + " | " + " | ".join(
        f"per message {b // 1000}k/{a // 1000}k" for a, b in zip(sizes, sizes[1:])) + " |"
    print(head)
    print("|---" * (1 + 2 * len(sizes) - 1) + "|")
    worst = 0.0
    for route, by_size in results.items():
        cells = [f"{by_size[n][0]:.0f} ms" for n in sizes]
        ratios = []
        for a, b in zip(sizes, sizes[1:]):
            (ms_a, units_a), (ms_b, units_b) = by_size[a], by_size[b]
            ratio = (ms_b / units_b) / (ms_a / units_a)
            worst = max(worst, ratio)
            ratios.append(f"{ratio:.2f}")
        print(f"| {route} | " + " | ".join(cells + ratios) + " |")
    if args.svg:
        curves = {r: {n: v[0] for n, v in by.items()} for r, by in results.items()
                  if r != "compact, per summarized message"}
        with open(args.svg, "w") as f:
            f.write(svg(curves, sizes))
        print(f"\nwrote {args.svg}", file=sys.stderr)
    print(f"\nworst per-message ratio: {worst:.2f} (linear is 1; the ceiling is 2)")
    if args.check and worst > 2:
        sys.exit(1)


if __name__ == "__main__":
    main()
