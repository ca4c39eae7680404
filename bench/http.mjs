#!/usr/bin/env node
// The comparison an agent builder makes: do the compaction preparation in-process with the
// reference (@mariozechner/pi-coding-agent@0.73.1), or POST the session to compactd and read
// the answer. Both timed in one run, interleaved, on the same files.
//
//   node bench/http.mjs --url http://127.0.0.1:PORT [--floor http://127.0.0.1:PORT2] [--rounds 15] [--warmup 3] FILE...
//
// Per file and per round, in a shuffled order (so load from other processes, and what one
// run leaves behind, hits all alike):
//   reference  in Node, from the file's text in memory: split + JSON.parse the lines,
//              migrateSessionEntries, the branch from the last entry, prepareCompaction,
//              then serializeConversation(convertToLlm(...)) of the history and of the turn
//              prefix and computeFileLists: what compactd answers with
//              include=cut,files,conversation.
//   curl       `curl --data-binary @FILE` to /v1/prepare, curl's own time_total (the whole
//              exchange, without curl's process start), answer written to /dev/null;
//              with include=cut,files,conversation and with the default (whole) answer.
//   fetch      Node's fetch (undici, keep-alive) with the file's bytes as body (a Buffer read
//              once from disk, as an agent holds the session file it appends to), then
//              res.json(), which a client needs to use the answer: what a pi-family client
//              in Node does; the same two includes. (A string body would cost the client a
//              UTF-8 encoding of the whole session on every request: 4-12 ms of its own CPU
//              for 1-2.4 MB here, before a byte is sent.)
//   fetch+gzip the fetch "work" request with the body gzipped by the client on every request
//              (zlib level 1, timed: an agent's session changes between compactions) and sent
//              with Content-Encoding: gzip: a tenth of the bytes on the wire.
//   floor      with --floor (bench/floor-server.mjs): curl and fetch exactly as above against a
//              server that only reads the body and answers as many bytes as compactd's
//              include=cut,files,conversation answer: the upload and the download alone, so
//              reference / floor is the best ratio a server could reach on this machine.
// Medians of the rounds; the spread printed is the interquartile range over the median.
//
// Prints one JSON document on stdout; progress on stderr.

import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import { performance } from "node:perf_hooks";

import { branchFromLast, loadEntries, loadReference, REF_VERSION, SETTINGS } from "./reference-lib.mjs";

const WORK = "cut,files,conversation";

const args = process.argv.slice(2);
let url;
let floor;
let rounds = 15;
let warmup = 3;
const files = [];
for (let i = 0; i < args.length; i++) {
	const a = args[i];
	if (a === "--url") url = args[++i];
	else if (a === "--floor") floor = args[++i];
	else if (a === "--rounds") rounds = Number(args[++i]);
	else if (a === "--warmup") warmup = Number(args[++i]);
	else files.push(path.resolve(a));
}
if (!url || files.length === 0) {
	console.error("usage: node bench/http.mjs --url http://127.0.0.1:PORT [--rounds N] [--warmup N] FILE...");
	process.exit(2);
}

const { prepareCompaction, serializeConversation, computeFileLists, convertToLlm, migrateSessionEntries } = await loadReference();

// ---------------------------------------------------------------------------------------------
// The reference, in-process (bench/reference-lib.mjs: loadEntriesFromFile minus the read,
// SessionManager's index + getBranch)
// ---------------------------------------------------------------------------------------------
function reference(text) {
	const entries = loadEntries(text);
	migrateSessionEntries(entries);
	const prep = prepareCompaction(branchFromLast(entries), SETTINGS);
	if (!prep) throw new Error("the reference finds nothing to compact");
	const history = serializeConversation(convertToLlm(prep.messagesToSummarize));
	const turnPrefix = prep.isSplitTurn ? serializeConversation(convertToLlm(prep.turnPrefixMessages)) : null;
	const lists = computeFileLists(prep.fileOps);
	return { firstKeptEntryId: prep.firstKeptEntryId, history, turnPrefix, lists };
}

// ---------------------------------------------------------------------------------------------
// compactd over HTTP
// ---------------------------------------------------------------------------------------------
const endpoint = (include) => `${url}/v1/prepare${include ? `?include=${include}` : ""}`;

function viaCurl(file, include, to = endpoint(include)) {
	const r = spawnSync(
		"curl",
		["-sS", "--fail", "-o", "/dev/null", "-w", "%{time_total} %{size_download}", "-H", "content-type: application/x-ndjson", "--data-binary", `@${file}`, to],
		{ encoding: "utf8" },
	);
	if (r.status !== 0) throw new Error(`curl failed (${r.status}): ${r.stderr}`);
	const [seconds, bytes] = r.stdout.trim().split(" ").map(Number);
	return { ms: seconds * 1000, bytes };
}

async function viaFetch(bytes, include, to = endpoint(include)) {
	const t = performance.now();
	const res = await fetch(to, { method: "POST", headers: { "content-type": "application/x-ndjson" }, body: bytes });
	if (!res.ok) throw new Error(`compactd answered ${res.status}: ${await res.text()}`);
	const answer = await res.json();
	const ms = performance.now() - t;
	if (to !== endpoint(include)) return { ms, answer };
	if (!answer.compactable) throw new Error("compactd finds nothing to compact");
	return { ms, answer };
}

/** fetch "work" with the body gzipped on the client, the compression timed too. */
async function viaFetchGzip(bytes) {
	const t = performance.now();
	const gz = zlib.gzipSync(bytes, { level: 1 });
	const res = await fetch(endpoint(WORK), {
		method: "POST",
		headers: { "content-type": "application/x-ndjson", "content-encoding": "gzip" },
		body: gz,
	});
	if (!res.ok) throw new Error(`compactd answered ${res.status}: ${await res.text()}`);
	const answer = await res.json();
	const ms = performance.now() - t;
	if (!answer.compactable) throw new Error("compactd finds nothing to compact");
	return { ms, sent: gz.length };
}

function timed(f) {
	const t = performance.now();
	const r = f();
	return { ms: performance.now() - t, r };
}

const median = (xs) => {
	const s = [...xs].sort((a, b) => a - b);
	const n = s.length;
	return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
};
const quantile = (xs, q) => {
	const s = [...xs].sort((a, b) => a - b);
	const pos = (s.length - 1) * q;
	const lo = Math.floor(pos);
	return s[lo] + (s[Math.min(lo + 1, s.length - 1)] - s[lo]) * (pos - lo);
};
const summary = (xs) => ({ medianMs: +median(xs).toFixed(3), iqrPct: +((100 * (quantile(xs, 0.75) - quantile(xs, 0.25))) / median(xs)).toFixed(1), minMs: +Math.min(...xs).toFixed(3), maxMs: +Math.max(...xs).toFixed(3), runs: xs.length });

/** Mulberry32: a small seeded generator, so every run times the same orders. */
function seeded(seed) {
	let a = seed >>> 0;
	return () => {
		a = (a + 0x6d2b79f5) >>> 0;
		let t = a;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}
const nextRandom = seeded(16);

/** A shuffled copy of `xs` (Fisher-Yates). */
function shuffled(xs, random) {
	const out = [...xs];
	for (let i = out.length - 1; i > 0; i--) {
		const j = Math.floor(random() * (i + 1));
		[out[i], out[j]] = [out[j], out[i]];
	}
	return out;
}

const KINDS = ["reference", "curlWork", "curlAll", "fetchWork", "fetchAll", "fetchGzipWork", ...(floor ? ["curlFloor", "fetchFloor"] : [])];
const results = [];
for (const file of files) {
	// Both sides start from the file in memory: the reference from its text (what pi's
	// loader reads), the HTTP clients from its bytes.
	const body = fs.readFileSync(file);
	const text = body.toString("utf8");
	const name = path.basename(file, ".jsonl");
	const bytes = body.length;
	process.stderr.write(`${name} (${(bytes / 1e6).toFixed(2)} MB): `);
	// The same work on both sides: the serialized history agrees, up to compactd's
	// documented divergences (docs/algorithm.md), which change a few lines at most.
	const ref = reference(text);
	const { answer } = await viaFetch(body, WORK);
	const [ours, theirs] = [answer.conversation.history.length, ref.history.length];
	if (Math.abs(ours - theirs) > 0.02 * theirs) throw new Error(`${name}: history of ${ours} chars, the reference's ${theirs}`);
	const same = answer.conversation.history === ref.history;
	process.stderr.write(same ? "same history; " : `history ${ours} chars, reference ${theirs}; `);
	// The floor answers as many bytes as compactd's work answer.
	const floorUrl = floor && `${floor}/?bytes=${viaCurl(file, WORK).bytes}`;
	const times = Object.fromEntries(KINDS.map((k) => [k, []]));
	const sizes = {};
	for (let round = 0; round < warmup + rounds; round++) {
		const keep = round >= warmup;
		const runs = {
			reference: () => timed(() => reference(text)).ms,
			curlWork: () => {
				const c = viaCurl(file, WORK);
				sizes.work = c.bytes;
				return c.ms;
			},
			curlAll: () => {
				const c = viaCurl(file, "");
				sizes.all = c.bytes;
				return c.ms;
			},
			fetchWork: async () => (await viaFetch(body, WORK)).ms,
			fetchAll: async () => (await viaFetch(body, "")).ms,
			fetchGzipWork: async () => {
				const g = await viaFetchGzip(body);
				sizes.gzipped = g.sent;
				return g.ms;
			},
			curlFloor: () => viaCurl(file, WORK, floorUrl).ms,
			fetchFloor: async () => (await viaFetch(body, WORK, floorUrl)).ms,
		};
		// A new order every round (a seeded shuffle: the same orders on every run), so no kind
		// always follows the same one: a run slows the next one down by what it leaves behind
		// (the reference's garbage, collected by V8's background threads while the next run
		// goes). Rotating a fixed order did not do that: curl "work" always came right after
		// the reference and took ~0.5 ms more there than after any other kind.
		for (const kind of shuffled(KINDS, nextRandom)) {
			const ms = await runs[kind]();
			if (keep) times[kind].push(ms);
		}
		process.stderr.write(".");
	}
	process.stderr.write("\n");
	results.push({ name, bytes, answerBytes: sizes, ...Object.fromEntries(KINDS.map((k) => [k, summary(times[k])])) });
}

console.log(JSON.stringify({ reference: `@mariozechner/pi-coding-agent@${REF_VERSION}`, node: process.versions.node, rounds, warmup, results }, null, 2));
