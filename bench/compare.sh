#!/usr/bin/env bash
# Offloading vs in-process, the way an agent builder weighs it: the reference
# (@mariozechner/pi-coding-agent 0.73.1) preparing a compaction and serializing the
# conversation in Node, against a release compactd answering POST /v1/prepare over HTTP
# (curl, and Node's fetch), timed in one run, interleaved, on the same files.
#
#   bash bench/compare.sh                 # from anywhere; ROUNDS=15 WARMUP=3 SETTLE_SECS=180 adjustable
#
# 1. cargo build --release; `cargo bench --bench prepare` with COMPACTD_BENCH_GENERATE_ONLY=1
#    writes the generated sessions into target/bench-data/ (20 MB: a seed nothing else uses)
# 2. npm ci --prefix tests/conformance when the reference is not installed
# 3. target/release/compactd serve on a free local port (prepare calls no model)
# 4. node bench/http.mjs: per round and file the reference, curl and fetch, each with
#    include=cut,files,conversation (the reference's work) and with the whole answer, and
#    both clients against bench/floor-server.mjs (reads the body, answers as many bytes as
#    the work answer: the transfer alone, so the best ratio this machine allows)
# 5. a Markdown table of medians and ratios (reference / compactd), with the spread
#    (interquartile range / median) of every column; raw JSON in target/bench-data/http.json
#
# bench/core.sh is the other comparison: compactd's core in criterion (MB/s) and peak memory.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
TARGET_DIR="${CARGO_TARGET_DIR:-target}"
case "$TARGET_DIR" in
/*) ;;
*) TARGET_DIR="$ROOT/$TARGET_DIR" ;;
esac
DATA="$TARGET_DIR/bench-data"
FIXTURES="$ROOT/tests/fixtures/pi-sessions"
FILES=("$FIXTURES/large-session.jsonl" "$FIXTURES/before-compaction.jsonl" "$DATA/generated-20mb.jsonl")

for tool in cargo node npm curl; do
	command -v "$tool" >/dev/null || {
		echo "compare.sh: $tool is required" >&2
		exit 1
	}
done

echo "==> cargo build --release" >&2
cargo build --release --locked >&2
echo "==> generated sessions" >&2
COMPACTD_BENCH_GENERATE_ONLY=1 cargo bench --locked --bench prepare >&2
if [[ ! -d tests/conformance/node_modules/@mariozechner/pi-coding-agent ]]; then
	echo "==> npm ci --prefix tests/conformance" >&2
	npm ci --prefix tests/conformance >&2
fi

PORT="$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
LOG="$DATA/compare-serve.log"
mkdir -p "$DATA"
COMPACTD_LISTEN="127.0.0.1:$PORT" "$TARGET_DIR/release/compactd" serve >"$LOG" 2>&1 &
SERVER=$!
FLOOR_PORT="$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
node bench/floor-server.mjs "$FLOOR_PORT" 2>>"$LOG" &
FLOOR=$!
trap 'kill "$SERVER" "$FLOOR" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
	curl -fs "http://127.0.0.1:$PORT/healthz" >/dev/null && break
	sleep 0.1
done
curl -fs "http://127.0.0.1:$PORT/healthz" >/dev/null || {
	echo "compare.sh: compactd did not start (see $LOG)" >&2
	exit 1
}

# The builds above leave the 1-minute load average high for a while: wait (at most
# SETTLE_SECS) until it falls below 0.5, so "before" says whether anything else is running.
for _ in $(seq "${SETTLE_SECS:-180}"); do
	awk '{exit !($1 < 0.5)}' /proc/loadavg 2>/dev/null && break
	sleep 1
done
LOAD_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
echo "==> node bench/http.mjs (rounds ${ROUNDS:-15}, warm-up ${WARMUP:-3}; load average $LOAD_BEFORE)" >&2
node bench/http.mjs --url "http://127.0.0.1:$PORT" --floor "http://127.0.0.1:$FLOOR_PORT" --rounds "${ROUNDS:-15}" --warmup "${WARMUP:-3}" "${FILES[@]}" >"$DATA/http.json"

LOAD_AFTER="$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
REV="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [[ -n "$(git -C "$ROOT" status --porcelain -- src Cargo.toml Cargo.lock 2>/dev/null)" ]]; then
	REV="$REV+dirty"
fi
node - "$DATA/http.json" "$REV" "$(nproc 2>/dev/null || echo '?')" "$LOAD_BEFORE" "$LOAD_AFTER" <<'EOF'
const fs = require("node:fs");
const [json, rev, cores, loadBefore, loadAfter] = process.argv.slice(2);
const run = JSON.parse(fs.readFileSync(json, "utf8"));
const ms = (x) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2)) + " ms";
const row = (cells) => "| " + cells.join(" | ") + " |";
const cell = (r, k) => `${ms(r[k].medianMs)} (${(r.reference.medianMs / r[k].medianMs).toFixed(1)}×)`;
console.log(`## compactd (${rev}) over HTTP vs the reference in-process (${run.reference}, Node ${run.node})\n`);
console.log(`Median of ${run.rounds} rounds (each in a shuffled order) after ${run.warmup} warm-up rounds; (n×) = reference / compactd. "work" = \`include=cut,files,conversation\`, "all" = the default answer.\n`);
console.log(row(["file", "size", "reference in-process", "curl, work", "curl, all", "fetch, work", "fetch, all", "fetch+gzip, work"]));
console.log(row(["---", "---:", "---:", "---:", "---:", "---:", "---:", "---:"]));
for (const r of run.results) {
	console.log(row([r.name, (r.bytes / 1e6).toFixed(2) + " MB", ms(r.reference.medianMs), cell(r, "curlWork"), cell(r, "curlAll"), cell(r, "fetchWork"), cell(r, "fetchAll"), cell(r, "fetchGzipWork")]));
}
console.log(`\n"fetch+gzip, work": the client gzips the session (zlib level 1, timed) and sends it with Content-Encoding: gzip; sent ${run.results.map((r) => `${(r.answerBytes.gzipped / 1e3).toFixed(0)} kB of ${(r.bytes / 1e3).toFixed(0)} kB`).join(", ")}.`);
const floor = run.results.every((r) => r.curlFloor);
if (floor) {
	console.log(`\nThe floor: the same body and an answer of the same size as "work", to a server that does nothing else (bench/floor-server.mjs); (n×) = reference / floor, the best any server could do here.\n`);
	console.log(row(["file", "curl, floor", "fetch, floor"]));
	console.log(row(["---", "---:", "---:"]));
	for (const r of run.results) console.log(row([r.name, cell(r, "curlFloor"), cell(r, "fetchFloor")]));
}
const kinds = ["reference", "curlWork", "curlAll", "fetchWork", "fetchAll", "fetchGzipWork", ...(floor ? ["curlFloor", "fetchFloor"] : [])];
console.log("\nSpread (interquartile range / median) of each column:\n");
console.log(row(["file", "reference", "curl, work", "curl, all", "fetch, work", "fetch, all", "fetch+gzip, work", ...(floor ? ["curl, floor", "fetch, floor"] : []), "answer work / all"]));
console.log(row(["---", ...kinds.map(() => "---:"), "---:"]));
for (const r of run.results) {
	const kb = (b) => (b / 1e3).toFixed(1) + " kB";
	console.log(row([r.name, ...kinds.map((k) => r[k].iqrPct + " %"), `${kb(r.answerBytes.work)} / ${kb(r.answerBytes.all)}`]));
}
console.log(`\n${cores} cores; load average (1, 5, 15 min) ${loadBefore} before the timed rounds, ${loadAfter} after (the benchmark's own load included).`);
// Only the load before counts: during the rounds the benchmark itself (client and server)
// keeps one to two processes running, so the load after is about 2 on a quiet 2-core machine.
const busy = !(Number(loadBefore.split(" ")[0]) <= 0.5);
console.log(
	busy
		? "The machine was busy: both sides shared the cores with other work, unevenly, so these ratios can be off by more than the spread above. Re-run on a quiet machine before quoting them."
		: "Quiet machine. The spread above is this run's noise; between runs a ratio moves about as much (IQR / median of its two columns), so quote one decimal at most.",
);
EOF
