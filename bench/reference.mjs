#!/usr/bin/env node
// Times the reference compaction preparation (@mariozechner/pi-coding-agent@0.73.1, installed in
// tests/conformance/node_modules) on session files, for comparison with `cargo bench --bench prepare`.
//
//   node bench/reference.mjs [--min-time S] [--min-iters N] [--mode prepare|full|both] [FILE...]
//
// Default files: the two real sessions in tests/fixtures/pi-sessions/ and
// target/bench-data/generated-50mb.jsonl (written by `cargo bench --bench prepare`).
//
// One iteration, from the file's text already in memory (what pi does when it compacts a session
// it has just loaded):
//   1. split lines + JSON.parse each, skipping blank/malformed lines, header check
//      (the reference's loadEntriesFromFile, minus the file read),
//   2. migrateSessionEntries (v1 -> v3: ids, parentIds, firstKeptEntryIndex -> Id),
//   3. index by id and walk parentId from the last entry to the root (SessionManager._buildIndex
//      + getBranch, including its Array.prototype.unshift),
//   4. prepareCompaction(path, {enabled: true, reserveTokens: 16384, keepRecentTokens: 20000}).
// Mode "full" additionally does the work compactd's answer includes and prepareCompaction does not:
// convertToLlm + serializeConversation of the history and turn prefix, the summarizer prompt
// strings (as generateSummary builds them), computeFileLists, and JSON.stringify of an answer
// object with the same content as compactd's (messages, conversation, requests, details).
//
// Prints one JSON document on stdout; progress goes to stderr.

import fs from "node:fs";
import path from "node:path";
import { performance } from "node:perf_hooks";

import { branchFromLast, loadEntries, loadReference, REF_VERSION, REPO, SETTINGS } from "./reference-lib.mjs";

// ---------------------------------------------------------------------------------------------
// Arguments
// ---------------------------------------------------------------------------------------------
const args = process.argv.slice(2);
let minTimeS = 2;
let minIters = 5;
let warmupIters = 2;
let mode = "both";
const files = [];
for (let i = 0; i < args.length; i++) {
	const a = args[i];
	if (a === "--min-time") minTimeS = Number(args[++i]);
	else if (a === "--min-iters") minIters = Number(args[++i]);
	else if (a === "--warmup") warmupIters = Number(args[++i]);
	else if (a === "--mode") mode = args[++i];
	else if (a === "-h" || a === "--help") {
		console.error("usage: node bench/reference.mjs [--min-time S] [--min-iters N] [--warmup N] [--mode prepare|full|both] [FILE...]");
		process.exit(0);
	} else files.push(path.resolve(a));
}
if (!["prepare", "full", "both"].includes(mode)) throw new Error(`--mode must be prepare, full or both, not ${mode}`);
if (files.length === 0) {
	const targetDir = process.env.CARGO_TARGET_DIR ? path.resolve(REPO, process.env.CARGO_TARGET_DIR) : path.join(REPO, "target");
	files.push(
		path.join(REPO, "tests/fixtures/pi-sessions/before-compaction.jsonl"),
		path.join(REPO, "tests/fixtures/pi-sessions/large-session.jsonl"),
		path.join(targetDir, "bench-data/generated-50mb.jsonl"),
	);
}

// ---------------------------------------------------------------------------------------------
// Reference modules, imported by file path (prepareCompaction is not exported from the root)
// ---------------------------------------------------------------------------------------------
const { prepareCompaction, serializeConversation, computeFileLists, formatFileOperations, SUMMARIZATION_SYSTEM_PROMPT, convertToLlm, migrateSessionEntries } =
	await loadReference();

// ---------------------------------------------------------------------------------------------
// The measured work
// ---------------------------------------------------------------------------------------------

/** What compactd returns on top of prepareCompaction (see the header comment). */
function equivalentAnswer(prep) {
	const history = serializeConversation(convertToLlm(prep.messagesToSummarize));
	const turnPrefix = prep.isSplitTurn ? serializeConversation(convertToLlm(prep.turnPrefixMessages)) : null;
	const { readFiles, modifiedFiles } = computeFileLists(prep.fileOps);
	let historyPrompt = `<conversation>\n${history}\n</conversation>\n\n`;
	if (prep.previousSummary) historyPrompt += `<previous-summary>\n${prep.previousSummary}\n</previous-summary>\n\n`;
	const requests = [{ kind: "history", system: SUMMARIZATION_SYSTEM_PROMPT, prompt: historyPrompt, maxTokens: Math.floor(0.8 * SETTINGS.reserveTokens) }];
	if (turnPrefix !== null && prep.turnPrefixMessages.length > 0) {
		requests.push({ kind: "turnPrefix", system: SUMMARIZATION_SYSTEM_PROMPT, prompt: `<conversation>\n${turnPrefix}\n</conversation>\n\n`, maxTokens: Math.floor(0.5 * SETTINGS.reserveTokens) });
	}
	return JSON.stringify({
		compactable: true,
		firstKeptEntryId: prep.firstKeptEntryId,
		isSplitTurn: prep.isSplitTurn,
		tokensBefore: prep.tokensBefore,
		previousSummary: prep.previousSummary ?? null,
		messagesToSummarize: prep.messagesToSummarize,
		turnPrefixMessages: prep.turnPrefixMessages,
		details: { readFiles, modifiedFiles },
		fileTags: formatFileOperations(readFiles, modifiedFiles),
		conversation: { history, turnPrefix },
		requests,
		settings: { keepRecentTokens: SETTINGS.keepRecentTokens, reserveTokens: SETTINGS.reserveTokens },
	});
}

/** One iteration; returns phase times (ms) and the preparation. */
function iteration(text, full) {
	const t0 = performance.now();
	const entries = loadEntries(text);
	const t1 = performance.now();
	migrateSessionEntries(entries);
	const t2 = performance.now();
	const pathEntries = branchFromLast(entries);
	const t3 = performance.now();
	const prep = prepareCompaction(pathEntries, SETTINGS);
	const t4 = performance.now();
	let answerBytes = 0;
	if (full && prep) answerBytes = equivalentAnswer(prep).length;
	const t5 = performance.now();
	return { phases: { parse: t1 - t0, migrate: t2 - t1, path: t3 - t2, prepare: t4 - t3, serialize: t5 - t4 }, total: t5 - t0, prep, pathEntries, answerBytes };
}

function stats(xs) {
	const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
	const sd = Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / Math.max(1, xs.length - 1));
	const sorted = [...xs].sort((a, b) => a - b);
	return { mean, stddev: sd, min: sorted[0], median: sorted[Math.floor(sorted.length / 2)], max: sorted[sorted.length - 1] };
}

const round = (x, d = 3) => Math.round(x * 10 ** d) / 10 ** d;

function measure(text, bytes, full) {
	for (let i = 0; i < warmupIters; i++) iteration(text, full);
	const times = [];
	const phaseSums = { parse: 0, migrate: 0, path: 0, prepare: 0, serialize: 0 };
	let last;
	const start = performance.now();
	while (times.length < minIters || performance.now() - start < minTimeS * 1000) {
		last = iteration(text, full);
		times.push(last.total);
		for (const k of Object.keys(phaseSums)) phaseSums[k] += last.phases[k];
	}
	const s = stats(times);
	const phasesMs = {};
	for (const k of Object.keys(phaseSums)) if (full || k !== "serialize") phasesMs[k] = round(phaseSums[k] / times.length);
	return {
		iterations: times.length,
		meanMs: round(s.mean),
		medianMs: round(s.median),
		minMs: round(s.min),
		maxMs: round(s.max),
		stddevMs: round(s.stddev),
		mbPerS: round(bytes / 1e6 / (s.mean / 1000), 2),
		phasesMs,
		...(full ? { answerChars: last.answerBytes } : {}),
		last,
	};
}

const results = [];
for (const file of files) {
	if (!fs.existsSync(file)) throw new Error(`missing ${file} (run cargo bench --bench prepare to generate the 50 MB session)`);
	const buf = fs.readFileSync(file);
	const text = buf.toString("utf8");
	const name = path.basename(file, ".jsonl");
	const out = { name, file: path.relative(REPO, file) || file, bytes: buf.length };
	for (const m of mode === "both" ? ["prepare", "full"] : [mode]) {
		process.stderr.write(`reference ${m}: ${name} (${(buf.length / 1e6).toFixed(2)} MB) ... `);
		const r = measure(text, buf.length, m === "full");
		process.stderr.write(`${r.iterations} iterations, mean ${r.meanMs.toFixed(1)} ms\n`);
		const { last, ...shown } = r;
		out[m] = shown;
		if (!out.result) {
			const prep = last.prep;
			const p = last.pathEntries;
			const lists = prep ? computeFileLists(prep.fileOps) : null;
			out.result = prep
				? {
						pathLength: p.length,
						firstKeptEntryIndex: p.findIndex((e) => e.id === prep.firstKeptEntryId),
						// v1 files get random ids in the reference; v3 ids are the file's own
						firstKeptEntryId: prep.firstKeptEntryId,
						isSplitTurn: prep.isSplitTurn,
						tokensBefore: prep.tokensBefore,
						hasPreviousSummary: prep.previousSummary !== undefined,
						messagesToSummarize: prep.messagesToSummarize.length,
						turnPrefixMessages: prep.turnPrefixMessages.length,
						readFiles: lists.readFiles.length,
						modifiedFiles: lists.modifiedFiles.length,
					}
				: null;
		}
	}
	results.push(out);
}

console.log(
	JSON.stringify(
		{
			reference: `@mariozechner/pi-coding-agent@${REF_VERSION}`,
			node: process.version,
			settings: SETTINGS,
			units: "times in ms, MB = 10^6 bytes of input per second",
			note:
				"mode 'prepare' times parse + migrateSessionEntries + getBranch + prepareCompaction only. The reference's " +
				"prepareCompaction does NOT serialize the conversation (pi does that later, in generateSummary) and builds no " +
				"JSON answer, so compactd's benchmark (parse + prepare + serializeConversation + summarizer requests + JSON " +
				"answer) does strictly more work. Mode 'full' adds that work in JavaScript (convertToLlm + " +
				"serializeConversation + prompt strings + computeFileLists + JSON.stringify of an equivalent answer) for an " +
				"apples-to-apples comparison.",
			minTimeS,
			minIters,
			warmupIters,
			files: results,
		},
		null,
		2,
	),
);
