#!/usr/bin/env python3
"""The event-stream and jobs phase of scripts/load-test; Python's standard
library only.

    python3 scripts/load-events.py --bin target/release/compactd [--clients 64] [--jobs 128]

Starts a fake OpenAI-compatible model that answers after --delay-ms and counts its calls,
and a compactd (COMPACTD_MAX_CONCURRENCY = --limit, heartbeats every --heartbeat-ms) in
front of it, then:

  sse   --clients clients at once, each POSTing --rounds /v1/summarize requests (a
        different prompt each, so neither the cache nor single flight joins them) with
        `Accept: text/event-stream` and reading the stream to its end: every stream must
        start with `prepared`, end with `result`, and carry heartbeats while the model
        is slow.
  jobs  --jobs jobs submitted with `Prefer: respond-async` and an Idempotency-Key by
        --clients clients, each submitted twice (the retry must join the job), each
        followed on GET /v1/jobs/{id}/events to its `result`: every submission 202, every
        job succeeded, and the model called once per job.

With --replicas 2 (needs redis-server on the PATH; scripts/install-redis), a
redis-server is started on a free port without persistence and every compactd gets
COMPACTD_REDIS_URL: the sse clients alternate between the replicas, and each job is
submitted to one replica, retried on the other and followed on the other, so the retry
joins and the events are read across replicas.

Prints RESULT lines and a table; exits non-zero when an expectation fails.
"""

import argparse
import http.client
import http.server
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class FakeModel(http.server.BaseHTTPRequestHandler):
    """An OpenAI chat-completions endpoint that takes its time."""

    calls = 0
    lock = threading.Lock()
    delay = 1.0
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        length = int(self.headers.get("content-length", "0"))
        self.rfile.read(length)
        with FakeModel.lock:
            FakeModel.calls += 1
        time.sleep(FakeModel.delay)
        body = json.dumps({
            "choices": [{"message": {"role": "assistant", "content": "## Goal\nLoad."},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
        }).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def read_events(resp, start=None):
    """(event names, heartbeat comments, seconds from `start` to the first event) of an
    SSE body."""
    names, heartbeats, first = [], 0, None
    start = time.monotonic() if start is None else start
    block = []
    while True:
        line = resp.readline()
        if not line:
            break
        line = line.decode().rstrip("\r\n")
        if line == "":
            for field in block:
                if field.startswith("event:"):
                    names.append(field[6:].strip())
                    if first is None:
                        first = time.monotonic() - start
                elif field.startswith(":") and "heartbeat" in field:
                    heartbeats += 1
            block = []
        else:
            block.append(line)
    return names, heartbeats, first


def summarize_body(n):
    return json.dumps({"systemPrompt": "",
                       "prompt": f"<conversation>\n[User]: load request {n}\n</conversation>"})


def percentile(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=128)
    ap.add_argument("--limit", type=int, default=256)
    ap.add_argument("--delay-ms", type=int, default=1000)
    ap.add_argument("--heartbeat-ms", type=int, default=250)
    ap.add_argument("--out", default="target/load-test")
    ap.add_argument("--replicas", type=int, default=1,
                    help="compactd processes; more than one share a redis-server")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)

    FakeModel.delay = a.delay_ms / 1000
    # The default listen backlog (5) drops connections under 64 clients: SYN retries
    # would add a second to some calls.
    http.server.ThreadingHTTPServer.request_queue_size = 1024
    model = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeModel)
    model.daemon_threads = True
    threading.Thread(target=model.serve_forever, daemon=True).start()
    model_port = model.server_address[1]

    redis = None
    redis_url = None
    if a.replicas > 1:
        redis_port = free_port()
        redis = subprocess.Popen(["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1",
                                  "--save", "", "--appendonly", "no"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        redis_url = f"redis://127.0.0.1:{redis_port}/0"
        for _ in range(100):
            try:
                with socket.create_connection(("127.0.0.1", redis_port), timeout=1) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        break
            except OSError:
                pass
            time.sleep(0.05)
    ports = [free_port() for _ in range(a.replicas)]
    servers = []
    log = open(os.path.join(a.out, "events-server.log"), "w")
    for p in ports:
        env = dict(os.environ,
                   COMPACTD_LISTEN=f"127.0.0.1:{p}",
                   COMPACTD_SUMMARIZER="openai",
                   COMPACTD_MODEL="load-model",
                   COMPACTD_BASE_URL=f"http://127.0.0.1:{model_port}/v1",
                   OPENAI_API_KEY="sk-load",
                   COMPACTD_MAX_CONCURRENCY=str(a.limit),
                   COMPACTD_HEARTBEAT_MS=str(a.heartbeat_ms),
                   COMPACTD_LOG_FORMAT="json",
                   RUST_LOG="warn")
        if redis_url:
            env["COMPACTD_REDIS_URL"] = redis_url
        servers.append(subprocess.Popen([a.bin, "serve"], env=env, stdout=log, stderr=log))
    port = ports[0]
    failures = 0
    try:
        for p in ports:
            for _ in range(100):
                try:
                    c = http.client.HTTPConnection("127.0.0.1", p, timeout=1)
                    c.request("GET", "/readyz")
                    if c.getresponse().status == 200:
                        break
                except OSError:
                    pass
                time.sleep(0.1)
            else:
                print("compactd did not start", file=sys.stderr)
                return 1

        def post(path, body, headers, port=port):
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            c.request("POST", path, body=body,
                      headers=dict({"content-type": "application/json"}, **headers))
            return c, c.getresponse()

        # --- sse
        counter = iter(range(10**9))
        counter_lock = threading.Lock()

        def sse_client(i):
            target = ports[i % len(ports)]
            out = []
            for _ in range(a.rounds):
                with counter_lock:
                    n = next(counter)
                start = time.monotonic()
                c, r = post("/v1/summarize", summarize_body(n), {"accept": "text/event-stream"},
                            target)
                if r.status != 200:
                    r.read()
                    out.append((r.status, [], 0, None, time.monotonic() - start))
                    continue
                names, beats, first = read_events(r, start)
                c.close()
                out.append((200, names, beats, first, time.monotonic() - start))
            return out

        calls_before = FakeModel.calls
        start = time.monotonic()
        with ThreadPoolExecutor(a.clients) as pool:
            streams = [s for batch in pool.map(sse_client, range(a.clients)) for s in batch]
        wall = time.monotonic() - start
        ok = [s for s in streams if s[0] == 200 and s[1][:1] == ["prepared"] and s[1][-1:] == ["result"]]
        bad = len(streams) - len(ok)
        with_beats = sum(1 for s in ok if s[2] > 0)
        firsts = [s[3] * 1e3 for s in ok if s[3] is not None]
        totals = [s[4] * 1e3 for s in ok]
        sse_calls = FakeModel.calls - calls_before
        print(f"RESULT sse clients={a.clients} streams={len(streams)} ok={len(ok)} bad={bad} "
              f"streams_per_s={len(streams) / wall:.1f} first_p50_ms={percentile(firsts, 50):.1f} "
              f"first_p99_ms={percentile(firsts, 99):.1f} total_p50_ms={percentile(totals, 50):.1f} "
              f"total_p99_ms={percentile(totals, 99):.1f} heartbeats={with_beats} upstream_calls={sse_calls}")

        # --- jobs
        def job(i):
            key = f"load-job-{i}"
            body = summarize_body(10**8 + i)
            # Submitted to one replica; retried and followed on the next one.
            first, other = ports[i % len(ports)], ports[(i + 1) % len(ports)]
            t0 = time.monotonic()
            c, r = post("/v1/summarize", body, {"prefer": "respond-async", "idempotency-key": key},
                        first)
            r.read()
            submit = time.monotonic() - t0
            location = r.getheader("location")
            c.close()
            c, retry = post("/v1/summarize", body, {"prefer": "respond-async", "idempotency-key": key},
                            other)
            retry.read()
            same = retry.getheader("location") == location
            c.close()
            if r.status != 202 or location is None:
                return (r.status, submit, False, [], 0.0)
            c = http.client.HTTPConnection("127.0.0.1", other, timeout=60)
            c.request("GET", f"{location}/events")
            names, _, _ = read_events(c.getresponse())
            c.close()
            return (202, submit, same, names, time.monotonic() - t0)

        calls_before = FakeModel.calls
        start = time.monotonic()
        with ThreadPoolExecutor(a.clients) as pool:
            jobs = list(pool.map(job, range(a.jobs)))
        wall = time.monotonic() - start
        accepted = sum(1 for j in jobs if j[0] == 202)
        joined = sum(1 for j in jobs if j[2])
        done = sum(1 for j in jobs if j[3][:1] == ["prepared"] and j[3][-1:] == ["result"])
        submits = [j[1] * 1e3 for j in jobs]
        totals = [j[4] * 1e3 for j in jobs if j[0] == 202]
        job_calls = FakeModel.calls - calls_before
        print(f"RESULT jobs jobs={a.jobs} accepted={accepted} retries_joined={joined} "
              f"succeeded={done} jobs_per_s={a.jobs / wall:.1f} submit_p50_ms={percentile(submits, 50):.1f} "
              f"submit_p99_ms={percentile(submits, 99):.1f} done_p50_ms={percentile(totals, 50):.1f} "
              f"done_p99_ms={percentile(totals, 99):.1f} upstream_calls={job_calls}")

        peak = 0
        for server in servers:
            with open(f"/proc/{server.pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM"):
                        peak = max(peak, int(line.split()[1]) // 1024)
        alive = all(server.poll() is None for server in servers)
        print(f"RESULT events-server replicas={len(servers)} peak_rss_mib={peak} alive={alive}")

        def expect(what, cond):
            nonlocal failures
            print(("  ok   " if cond else "  FAIL ") + what)
            failures += 0 if cond else 1

        expect(f"sse: every stream starts with prepared and ends with result (bad: {bad})", bad == 0)
        expect(f"sse: streams waiting on the model carry heartbeats ({with_beats} of {len(ok)})",
               with_beats == len(ok))
        expect(f"sse: one model call per stream ({sse_calls} for {len(streams)})", sse_calls == len(streams))
        expect(f"jobs: every submission 202 ({accepted} of {a.jobs})", accepted == a.jobs)
        expect(f"jobs: every retry joined its job ({joined})", joined == a.jobs)
        expect(f"jobs: every job followed to its result ({done})", done == a.jobs)
        expect(f"jobs: one model call per job ({job_calls} for {a.jobs})", job_calls == a.jobs)
        expect("servers alive", alive)
    finally:
        for server in servers:
            server.terminate()
            server.wait(timeout=30)
        if redis:
            redis.kill()
            redis.wait()
        model.shutdown()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
