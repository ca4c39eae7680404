#!/usr/bin/env bash
# compactd's core in criterion vs the reference (pi-coding-agent 0.73.1) in a separate Node run,
# on the same session files (throughput and peak memory). The side-by-side HTTP comparison
# is bench/compare.sh.
#
#   bash bench/core.sh               # from anywhere
#   SKIP_BENCH=1 bash bench/core.sh      # reuse the last criterion results
#
# 1. cargo bench --bench prepare (criterion; also writes target/bench-data/generated-50mb.jsonl)
# 2. cargo build --release (for the peak-memory runs of `compactd prepare`)
# 3. npm ci --prefix tests/conformance when the reference is not installed
# 4. node bench/reference.mjs (JSON kept in target/bench-data/reference.json)
# 5. Markdown tables: time/throughput from target/criterion/prepare/<id>/new/estimates.json
#    (mean point estimate) vs the reference's mean; then peak RSS (/usr/bin/time -v).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

TARGET_DIR="${CARGO_TARGET_DIR:-target}"
case "$TARGET_DIR" in
/*) ;;
*) TARGET_DIR="$ROOT/$TARGET_DIR" ;;
esac
DATA="$TARGET_DIR/bench-data"
CRITERION="$TARGET_DIR/criterion/prepare"
CRITERION_CORE="$TARGET_DIR/criterion/prepare-core"
FIXTURES="$ROOT/tests/fixtures/pi-sessions"

IDS=(before-compaction large-session generated-50mb)
declare -A FILES=(
	[before-compaction]="$FIXTURES/before-compaction.jsonl"
	[large-session]="$FIXTURES/large-session.jsonl"
	[generated-50mb]="$DATA/generated-50mb.jsonl"
)

for tool in cargo node npm; do
	command -v "$tool" >/dev/null || {
		echo "core.sh: $tool is required" >&2
		exit 1
	}
done

if [[ "${SKIP_BENCH:-0}" != 1 ]]; then
	echo "==> cargo bench --bench prepare" >&2
	cargo bench --bench prepare >&2
fi
for id in "${IDS[@]}"; do
	[[ -f "$CRITERION_CORE/$id/new/estimates.json" ]] || {
		echo "core.sh: no criterion result for $id ($CRITERION_CORE/$id/new/estimates.json)" >&2
		exit 1
	}
	[[ -f "$CRITERION/$id/new/estimates.json" ]] || {
		echo "core.sh: no criterion result for $id ($CRITERION/$id/new/estimates.json)" >&2
		exit 1
	}
	[[ -f "${FILES[$id]}" ]] || {
		echo "core.sh: missing input ${FILES[$id]}" >&2
		exit 1
	}
done

echo "==> cargo build --release" >&2
cargo build --release >&2
BIN="$TARGET_DIR/release/compactd"

if [[ ! -d tests/conformance/node_modules/@mariozechner/pi-coding-agent ]]; then
	echo "==> npm ci --prefix tests/conformance" >&2
	npm ci --prefix tests/conformance >&2
fi

echo "==> node bench/reference.mjs" >&2
mkdir -p "$DATA"
REF_JSON="$DATA/reference.json"
node bench/reference.mjs "${FILES[before-compaction]}" "${FILES[large-session]}" "${FILES[generated-50mb]}" >"$REF_JSON"

MEM_ROWS=""
if [[ -x /usr/bin/time ]]; then
	echo "==> peak memory (/usr/bin/time -v)" >&2
	for id in "${IDS[@]}"; do
		f="${FILES[$id]}"
		ours="$(/usr/bin/time -v "$BIN" prepare "$f" 2>&1 >/dev/null | awk -F': ' '/Maximum resident set size/ {print $2}')"
		ref="$(/usr/bin/time -v node bench/reference.mjs --mode prepare --warmup 0 --min-iters 1 --min-time 0 "$f" 2>&1 >/dev/null |
			awk -F': ' '/Maximum resident set size/ {print $2}')"
		MEM_ROWS+="$id $(stat -c %s "$f") ${ours:-0} ${ref:-0}"$'\n'
	done
else
	echo "core.sh: /usr/bin/time not found, skipping peak memory" >&2
fi

REV="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [[ -n "$(git -C "$ROOT" status --porcelain -- src Cargo.toml Cargo.lock 2>/dev/null)" ]]; then
	REV="$REV+dirty"
fi

node - "$CRITERION" "$CRITERION_CORE" "$REF_JSON" "$MEM_ROWS" "$REV" "${IDS[@]}" <<'EOF'
const fs = require("node:fs");
const path = require("node:path");
const [criterion, criterionCore, refJson, memRows, rev, ...ids] = process.argv.slice(2);
const ref = JSON.parse(fs.readFileSync(refJson, "utf8"));
const byName = new Map(ref.files.map((f) => [f.name, f]));
const mb = (b) => (b / 1e6).toFixed(2) + " MB";
const ms = (x) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2)) + " ms";
const rate = (bytes, msv) => (bytes / 1e6 / (msv / 1000)).toFixed(1);
const row = (cells) => "| " + cells.join(" | ") + " |";

const load = (dir, id) => {
	const est = JSON.parse(fs.readFileSync(path.join(dir, id, "new", "estimates.json"), "utf8"));
	return { meanMs: est.mean.point_estimate / 1e6, ciMs: [est.mean.confidence_interval.lower_bound / 1e6, est.mean.confidence_interval.upper_bound / 1e6] };
};
const ours = {};
const core = {};
for (const id of ids) {
	ours[id] = load(criterion, id);
	core[id] = load(criterionCore, id);
}

console.log(`## compactd (${rev}) vs reference (${ref.reference}, Node ${ref.node})\n`);
console.log("### Like for like: parse + migrate + path + prepare (compactd `prepare-core`, reference `prepareCompaction`)\n");
console.log(row(["file", "size", "compactd mean", "reference mean", "compactd MB/s", "reference MB/s", "ratio (ref / compactd)"]));
console.log(row(["---", "---:", "---:", "---:", "---:", "---:", "---:"]));
for (const id of ids) {
	const r = byName.get(id);
	const o = core[id];
	console.log(row([id, mb(r.bytes), ms(o.meanMs), ms(r.prepare.meanMs), rate(r.bytes, o.meanMs), rate(r.bytes, r.prepare.meanMs), (r.prepare.meanMs / o.meanMs).toFixed(2) + "×"]));
}
console.log("\n### The whole /v1/prepare answer vs the reference's prepareCompaction\n");
console.log("compactd also serializes the conversation, builds the summarizer requests and writes the JSON answer. MB = 10^6 bytes of input.\n");
console.log(row(["file", "size", "compactd mean", "reference mean", "compactd MB/s", "reference MB/s", "ratio (ref / compactd)"]));
console.log(row(["---", "---:", "---:", "---:", "---:", "---:", "---:"]));
for (const id of ids) {
	const r = byName.get(id);
	const o = ours[id];
	console.log(row([id, mb(r.bytes), ms(o.meanMs), ms(r.prepare.meanMs), rate(r.bytes, o.meanMs), rate(r.bytes, r.prepare.meanMs), (r.prepare.meanMs / o.meanMs).toFixed(2) + "×"]));
}
console.log("\nNote: the reference's prepareCompaction does NOT serialize the conversation (pi does it later, in generateSummary) and builds no JSON answer; compactd's numbers include that work. The table below adds the same work to the reference (convertToLlm + serializeConversation + prompts + JSON.stringify of an equivalent answer).\n");
console.log(row(["file", "compactd mean", "reference + serialize mean", "reference + serialize MB/s", "ratio (ref+ser / compactd)", "reference phases (parse / migrate / path / prepare / serialize)"]));
console.log(row(["---", "---:", "---:", "---:", "---:", "---"]));
for (const id of ids) {
	const r = byName.get(id);
	const o = ours[id];
	if (!r.full) continue;
	const p = r.full.phasesMs;
	console.log(row([id, ms(o.meanMs), ms(r.full.meanMs), rate(r.bytes, r.full.meanMs), (r.full.meanMs / o.meanMs).toFixed(2) + "×", [p.parse, p.migrate, p.path, p.prepare, p.serialize].map((x) => x.toFixed(1)).join(" / ") + " ms"]));
}
console.log(`\ncompactd 95% CI of the mean: ${ids.map((id) => `${id} ${ours[id].ciMs.map((x) => x.toFixed(2)).join("–")} ms`).join("; ")}. Reference iterations: ${ids.map((id) => `${id} ${byName.get(id).prepare.iterations}/${byName.get(id).full?.iterations ?? "-"}`).join("; ")}.`);

const mem = memRows.trim() ? memRows.trim().split("\n").map((l) => l.trim().split(/\s+/)) : [];
if (mem.length) {
	console.log("\n## Peak memory (Maximum resident set size, /usr/bin/time -v)\n");
	console.log("compactd: `target/release/compactd prepare FILE > /dev/null` (read file + parse + prepare + answer + write). Reference: one `node bench/reference.mjs --mode prepare` iteration on FILE (Node baseline + module load included).\n");
	console.log(row(["file", "input size", "compactd peak RSS", "peak / input", "reference peak RSS", "peak / input"]));
	console.log(row(["---", "---:", "---:", "---:", "---:", "---:"]));
	for (const [id, bytes, oursKb, refKb] of mem) {
		const b = Number(bytes);
		const o = Number(oursKb) * 1024;
		const rf = Number(refKb) * 1024;
		console.log(row([id, mb(b), mb(o), (o / b).toFixed(2) + "×", mb(rf), (rf / b).toFixed(2) + "×"]));
	}
}
EOF
