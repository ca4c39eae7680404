#!/usr/bin/env node
// Seeded generator of adversarial pi sessions for the compactd conformance corpus.
//
//   node generate.mjs            -> rewrites corpus/gen-NNN.jsonl (deterministic, no Math.random)
//
// Every file is produced from its own mulberry32 stream (seed derived from MASTER_SEED and the
// file number), so the corpus is byte-identical on every run. See README.md for what is covered.
// The generator only emits input the reference can digest without crashing (see README,
// "Inputs the reference cannot take"), and validates every file it writes.

import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const OUT = path.join(HERE, "corpus");
const COUNT = 336;
const MASTER_SEED = 0x5eedc0de;

// ---------------------------------------------------------------------------------------------
// PRNG
// ---------------------------------------------------------------------------------------------
class Rng {
	constructor(seed) {
		this.s = seed >>> 0;
	}
	next() {
		// mulberry32
		this.s = (this.s + 0x6d2b79f5) >>> 0;
		let t = this.s;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	}
	int(lo, hi) {
		return lo + Math.floor(this.next() * (hi - lo + 1));
	}
	chance(p) {
		return this.next() < p;
	}
	pick(a) {
		return a[Math.floor(this.next() * a.length)];
	}
	hex(n) {
		let s = "";
		for (let i = 0; i < n; i++) s += "0123456789abcdef"[this.int(0, 15)];
		return s;
	}
	shuffle(a) {
		const b = a.slice();
		for (let i = b.length - 1; i > 0; i--) {
			const j = this.int(0, i);
			[b[i], b[j]] = [b[j], b[i]];
		}
		return b;
	}
}

// ---------------------------------------------------------------------------------------------
// Serialization helpers: literal numbers and ordered (possibly duplicate-key) objects
// ---------------------------------------------------------------------------------------------
/** A JSON number written verbatim into the file (e.g. "1e21", "-0", "9007199254740993"). */
class RawNum {
	constructor(text) {
		this.text = text;
	}
}
/** An object written with exactly these key/value pairs in this order (duplicates allowed). */
class Pairs {
	constructor(pairs) {
		this.pairs = pairs;
	}
}

function ser(v, sp) {
	const colon = sp ? ": " : ":";
	const comma = sp ? ", " : ",";
	if (v instanceof RawNum) return v.text;
	if (v instanceof Pairs) return `{${v.pairs.map(([k, x]) => JSON.stringify(k) + colon + ser(x, sp)).join(comma)}}`;
	if (Array.isArray(v)) return `[${v.map((x) => (x === undefined ? "null" : ser(x, sp))).join(comma)}]`;
	if (v !== null && typeof v === "object") {
		return `{${Object.entries(v)
			.filter(([, x]) => x !== undefined)
			.map(([k, x]) => JSON.stringify(k) + colon + ser(x, sp))
			.join(comma)}}`;
	}
	return JSON.stringify(v);
}

// ---------------------------------------------------------------------------------------------
// Text material
// ---------------------------------------------------------------------------------------------
const WORDS = (
	"the a function compaction session token refactor src cargo test error value branch leaf summary parse json " +
	"rust node fix build retry index path file module struct impl async await return null undefined 0x1f 42 π " +
	"lorem ipsum dolor sit amet config server client request response handler stream buffer cache hash map vec " +
	"let const mut fn pub use mod match Some None Ok Err unwrap expect println! assert_eq! TODO FIXME"
).split(" ");
const ASTRAL = ["😀", "𝒳", "🦀", "𝕏", "🎉", "🚀", "\u{1F9D1}", "\u{10000}", "\u{10FFFF}", "\u{1D11E}"];
const BMP1 = ["é", "\u2028", "\u2029", "\u0000", "\u001f", "\u007f", '"', "\\", "/", "\n", "\t", "中", "\uFF21", "\uE000", "\uFFFD", "\u0301", "\u00A0", "\u200B", "Ω", "\r"];
const SPECIALS = [
	...ASTRAL,
	"👩‍💻",
	"🇯🇵",
	"e\u0301",
	"n\u0303\u0323",
	"\u2028",
	"\u2029",
	"\u0000",
	"\u001f",
	"\u007f",
	"\u0008",
	"\f",
	"\t",
	"\n",
	"\r\n",
	'"',
	"\\",
	"/",
	"\\/",
	"\\u0041",
	"\\ud83d",
	"'",
	"`",
	"ü",
	"中文",
	"\uFEFF",
	"\u00A0",
	"\uFF21",
	"\uE000",
	"\uFFFD",
	"</summary>",
	"[User]: ",
	"[Tool result]: ",
	"${x}",
	"<conversation>",
	"\u200B",
	"Ω",
	"ﬁ",
	"\n\n[... 5 more characters truncated]",
];
const ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789     .,;:-_()";

function text(r, approx, special = 0.03) {
	let s = "";
	while (s.length < approx) {
		if (s) s += r.chance(0.1) ? "\n" : " ";
		s += r.chance(special) ? r.pick(SPECIALS) : r.pick(WORDS);
	}
	return s;
}

/**
 * Exactly `units` UTF-16 code units. When astralAt >= 0 an astral character occupies units
 * [astralAt, astralAt + 1]. Other astral characters are sprinkled where they do not touch it.
 */
function exactText(r, units, astralAt = -1, special = 0.04) {
	let s = "";
	while (s.length < units) {
		const n = s.length;
		if (n === astralAt) {
			s += r.pick(ASTRAL);
			continue;
		}
		const canAstral = n + 2 <= units && n + 1 !== astralAt && (astralAt < 0 || n + 1 < astralAt || n > astralAt);
		if (canAstral && r.chance(0.01)) s += r.pick(ASTRAL);
		else if (r.chance(special)) s += r.pick(BMP1);
		else s += ALNUM[r.int(0, ALNUM.length - 1)];
	}
	if (s.length !== units) throw new Error("exactText length");
	if (astralAt >= 0 && !(s.charCodeAt(astralAt) >= 0xd800 && s.charCodeAt(astralAt) <= 0xdbff)) throw new Error("exactText astral");
	return s;
}

/** Split a well-formed string into `k` pieces without cutting a surrogate pair. */
function splitSafe(r, s, k) {
	const cuts = new Set();
	for (let i = 0; i < k - 1 && s.length > 2; i++) {
		let c = r.int(1, s.length - 1);
		const cc = s.charCodeAt(c);
		if (cc >= 0xdc00 && cc <= 0xdfff) c -= 1;
		if (c > 0) cuts.add(c);
	}
	const sorted = [...cuts].sort((a, b) => a - b);
	const out = [];
	let prev = 0;
	for (const c of sorted) {
		out.push(s.slice(prev, c));
		prev = c;
	}
	out.push(s.slice(prev));
	return out;
}

const PATHS = [
	"src/main.rs",
	"src/lib.rs",
	"src/a.ts",
	"src/Z.ts",
	"src/é.ts",
	"src/e\u0301.ts",
	"src/😀.ts",
	"src/\uFF21.ts",
	"src/\uE000.ts",
	"src/𝒳/mod.rs",
	"/Users/dev/project/package.json",
	"dir with space/notes.md",
	"C:\\repo\\win.txt",
	"README.md",
	"readme.md",
	"./rel/../x.js",
	'src/"quoted".ts',
	"tests/it's.rs",
	"src/tab\tname.ts",
	"a/b/c/d/e/f/g.txt",
	"src/line\u2028sep.ts",
	"Cargo.toml",
	"packages/coding-agent/src/core/compaction/compaction.ts",
];

const NUMBER_ZOO = [
	"1.5",
	"1e21",
	"1E-7",
	"-0",
	"0.000001",
	"123456789012345678901",
	"9007199254740993",
	"5e-324",
	"1.7976931348623157e308",
	"1.0",
	"1e20",
	"123e-20",
	"0.1",
	"0.30000000000000004",
	"-1e-300",
	"1E+2",
	"-0.0",
	"100",
	"4.35",
	"2.5e-8",
	"1e-6",
	"1e-7",
	"999999999999999999999",
	"0",
	"-42",
];

// ---------------------------------------------------------------------------------------------
// Session builder
// ---------------------------------------------------------------------------------------------
const IMG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

class Builder {
	constructor(r, version, opts = {}) {
		this.r = r;
		this.version = version; // 1, 2, 3
		this.items = []; // parsed entries (objects), header first when present
		this.ids = new Set();
		this.byId = new Map();
		this.parentOf = new Map();
		this.children = new Map();
		this.leaf = null;
		this.time = Date.UTC(2025, 0, 1) + r.int(0, 300) * 86400000 + r.int(0, 86400000);
		this.opts = opts;
		this.reserved = [];
		this.callSeq = 0;
	}
	get v1() {
		return this.version === 1;
	}
	tick() {
		this.time += this.r.int(1, 90000);
		return this.time;
	}
	iso() {
		return new Date(this.tick()).toISOString();
	}
	header(extra = {}) {
		const h = { type: "session" };
		if (this.version >= 2) h.version = this.version;
		if (extra.noId !== true) h.id = extra.id ?? `${this.r.hex(8)}-${this.r.hex(4)}-4${this.r.hex(3)}-a${this.r.hex(3)}-${this.r.hex(12)}`;
		h.timestamp = this.iso();
		h.cwd = this.r.pick(["/Users/dev/project", "/home/u/wörk", "C:\\Users\\dev", "/tmp/𝒳"]);
		if (this.r.chance(0.2)) h.provider = "anthropic";
		if (this.r.chance(0.2)) h.parentSession = "/tmp/old.jsonl";
		delete extra.noId;
		delete extra.id;
		Object.assign(h, extra);
		this.items.push(h);
		return h;
	}
	newId() {
		if (this.reserved.length) return this.reserved.shift();
		for (;;) {
			const id = this.r.chance(0.1) ? `${this.r.hex(8)}-${this.r.hex(4)}-${this.r.hex(4)}` : this.r.hex(8);
			if (!this.ids.has(id)) {
				this.ids.add(id);
				return id;
			}
		}
	}
	/** The id the k-th next entry will get (k = 0: the next one), for references to the future. */
	reserveNext(k = 0) {
		while (this.reserved.length <= k) {
			const saved = this.reserved;
			this.reserved = [];
			const id = this.newId();
			this.reserved = saved;
			this.reserved.push(id);
		}
		return this.reserved[k];
	}
	add(type, fields = {}, parent) {
		const e = { type };
		if (!this.v1) {
			e.id = this.newId();
			e.parentId = parent !== undefined ? parent : this.leaf;
		}
		e.timestamp = this.iso();
		Object.assign(e, fields);
		if (this.opts.extraFields && this.r.chance(0.08)) e[this.r.pick(["x_extra", "_meta", "future"])] = { n: this.r.int(0, 9), s: text(this.r, 10) };
		this.items.push(e);
		if (!this.v1) {
			this.byId.set(e.id, e);
			this.parentOf.set(e.id, e.parentId);
			if (e.parentId !== null) {
				if (!this.children.has(e.parentId)) this.children.set(e.parentId, []);
				this.children.get(e.parentId).push(e.id);
			}
			this.leaf = e.id;
		}
		return e;
	}
	/** position of the next entry in the parsed array (header = 0) */
	get nextPos() {
		return this.items.length;
	}
	pathIds() {
		const out = [];
		let cur = this.leaf;
		while (cur !== null && cur !== undefined && this.byId.has(cur)) {
			out.unshift(cur);
			cur = this.parentOf.get(cur);
		}
		return out;
	}
	msg(message, parent) {
		return this.add("message", { message }, parent);
	}

	// ---- messages ----
	user(content) {
		const r = this.r;
		let c = content;
		if (c === undefined) {
			const t = text(r, r.int(5, 120), this.opts.special ?? 0.03);
			const mode = r.int(0, 9);
			if (mode < 5) c = t;
			else if (mode < 8) c = [{ type: "text", text: t }];
			else if (mode === 8) c = [{ type: "text", text: t }, { type: "image", data: IMG, mimeType: "image/png" }, { type: "text", text: text(r, 20) }];
			else c = [{ type: "text", text: "" }, { type: "x_unknown_block", payload: 1 }, { type: "text", text: t }];
		}
		const m = { role: "user", content: c, timestamp: this.time };
		if (this.opts.extraFields && r.chance(0.1)) m.x_client = { v: 2 };
		return this.msg(m);
	}
	usage(stop) {
		const r = this.r;
		const input = r.int(0, 50000);
		const output = r.int(0, 4000);
		const cacheRead = r.chance(0.5) ? r.int(0, 80000) : 0;
		const cacheWrite = r.chance(0.3) ? r.int(0, 5000) : 0;
		let totalTokens = input + output + cacheRead + cacheWrite;
		if (r.chance(0.15)) totalTokens = 0; // components only
		return {
			input,
			output,
			cacheRead,
			cacheWrite,
			totalTokens,
			cost: { input: input * 3e-6, output: output * 1.5e-5, cacheRead: cacheRead * 3e-7, cacheWrite: cacheWrite * 3.75e-6, total: 0.0123 },
		};
	}
	assistant(content, stopReason) {
		const r = this.r;
		let stop = stopReason ?? (content.some((b) => b.type === "toolCall") ? "toolUse" : "stop");
		if (stopReason === undefined && r.chance(0.06)) stop = r.pick(["aborted", "error", "length"]);
		const m = {
			role: "assistant",
			content,
			provider: r.pick(["anthropic", "openai", "google"]),
			model: r.pick(["claude-sonnet-4-5", "gpt-5", "gemini-2.5-pro", "claude-opus-4-5"]),
			usage: this.usage(stop),
			stopReason: stop,
			timestamp: this.time,
		};
		if (r.chance(0.3)) m.api = "anthropic-messages";
		if (stop === "error") m.errorMessage = "overloaded_error: \u2028 try again";
		if (this.opts.extraFields && r.chance(0.1)) m.x_trace = [1, "two", { three: 3 }];
		return this.msg(m);
	}
	toolResult(call, blocks, isError = false) {
		const m = { role: "toolResult", toolCallId: call.id, toolName: call.name, content: blocks, isError, timestamp: this.time };
		if (this.r.chance(0.2)) m.details = { diff: text(this.r, 30), truncation: null };
		return this.msg(m);
	}
	bash(flags = {}) {
		const r = this.r;
		const m = { role: "bashExecution", command: flags.command ?? r.pick(["ls -la", "cargo test 2>&1 | tail", 'echo "𝒳\\n"', "git status", "npm ci", "printf '\\u2028'"]) };
		m.output = flags.output ?? (r.chance(0.25) ? "" : text(r, r.int(10, 400), 0.05));
		if (flags.exitCode !== "absent") m.exitCode = flags.exitCode !== undefined ? flags.exitCode : r.pick([0, 0, 1, null, 127]);
		m.cancelled = flags.cancelled ?? r.chance(0.15);
		m.truncated = flags.truncated ?? r.chance(0.2);
		if (flags.fullOutputPath ?? (m.truncated && r.chance(0.6))) m.fullOutputPath = "/tmp/pi-bash-" + r.hex(6) + ".log";
		if (flags.excludeFromContext === "absent") {
			// leave the field out
		} else if (flags.excludeFromContext !== undefined) m.excludeFromContext = flags.excludeFromContext;
		else if (r.chance(0.15)) m.excludeFromContext = r.chance(0.8);
		m.timestamp = this.time;
		return this.msg(m);
	}
	customMessage(opts = {}) {
		const r = this.r;
		const content =
			opts.content ??
			(r.chance(0.5)
				? text(r, r.int(5, 150), 0.05)
				: [{ type: "text", text: text(r, r.int(5, 150)) }, ...(r.chance(0.4) ? [{ type: "image", data: IMG, mimeType: "image/png" }] : []), ...(r.chance(0.2) ? [{ type: "x_block" }] : [])]);
		const f = { customType: r.pick(["ext:note", "reminder", "𝒳-hook", "todo"]), content, display: opts.display ?? r.chance(0.5) };
		if (r.chance(0.4)) f.details = { source: "hook", n: r.int(0, 5) };
		return this.add("custom_message", f);
	}
	branchSummary(fromId, opts = {}) {
		const r = this.r;
		const f = { fromId: fromId ?? "root", summary: opts.summary ?? (r.chance(0.2) ? "" : text(r, r.int(20, 300), 0.04)) };
		if (opts.details ?? r.chance(0.5)) f.details = { readFiles: [r.pick(PATHS), r.pick(PATHS)], modifiedFiles: r.chance(0.5) ? [r.pick(PATHS)] : [] };
		if (opts.fromHook ?? r.chance(0.2)) f.fromHook = true;
		return this.add("branch_summary", f, opts.parent);
	}
	metadata(n) {
		const r = this.r;
		for (let i = 0; i < n; i++) {
			const k = r.int(0, 7);
			if (k === 0) this.add("thinking_level_change", { thinkingLevel: r.pick(["off", "low", "medium", "high", "xhigh"]) });
			else if (k === 1) this.add("model_change", { provider: r.pick(["anthropic", "openai"]), modelId: r.pick(["claude-sonnet-4-5", "gpt-5"]) });
			else if (k === 2) this.add("label", { targetId: this.leaf ?? "nope", label: r.chance(0.3) ? undefined : text(r, 8) });
			else if (k === 3) this.add("session_info", { name: text(r, 12) });
			else if (k === 4) this.add("custom", { customType: "ext-state", data: { k: r.int(0, 100), arr: [1, "𝒳"] } });
			else if (k === 5) this.add("x_future_thing", { payload: { nested: [true, null] }, note: text(r, 10) });
			else if (k === 6) this.add(r.pick(["checkpoint_v9", "Message", "x-ext:marker", "MESSAGE"]), { data: text(r, 10) });
			else this.add("thinking_level_change", { thinkingLevel: "high" });
		}
	}

	// ---- tool calls ----
	call(name, args) {
		return { type: "toolCall", id: `toolu_${this.r.hex(10)}${this.callSeq++}`, name, arguments: args };
	}
	argsFor(name) {
		const r = this.r;
		const p = () => r.pick(PATHS);
		switch (name) {
			case "read":
				return r.chance(0.5) ? { path: p() } : { path: p(), offset: r.int(1, 500), limit: r.pick([100, 2000]) };
			case "write":
				return { path: p(), content: text(r, r.int(20, 300), 0.05) };
			case "edit":
				return r.chance(0.7) ? { path: p(), oldText: text(r, r.int(5, 80), 0.05), newText: text(r, r.int(5, 80), 0.05) } : { path: p(), edits: [{ oldText: "a", newText: "b" }, { oldText: "\\", newText: "/" }] };
			case "bash":
				return { command: r.pick(["cargo test", "ls -la src/", 'grep -rn "fn main" .', "echo $'\\u2028'"]), timeout: r.pick([60, 120, 1.5]) };
			case "grep":
				return { pattern: "fn\\s+\\w+\\(", path: "src", "-i": true, glob: "*.rs" };
			case "find":
				return { pattern: "*.𝒳", limit: 1000 };
			default:
				return {};
		}
	}
	weirdArgs(kind) {
		const r = this.r;
		switch (kind) {
			case "numbers":
				return new Pairs(r.shuffle(NUMBER_ZOO).slice(0, r.int(4, 10)).map((n, i) => [`n${i}`, new RawNum(n)]).concat([["arr", r.shuffle(NUMBER_ZOO).slice(0, 5).map((n) => new RawNum(n))]]));
			case "intkeys":
				return new Pairs([
					["b", 1],
					["10", "ten"],
					["2", "two"],
					["1", "one"],
					...(r.chance(0.5) ? [["4294967295", "not-index"], ["4294967294", "max-index"], ["01", "lead-zero"], ["-1", "neg"], ["1.5", "frac"]] : []),
					["a", new Pairs([["z", 1], ["3", [new Pairs([["y", 0], ["0", 0]])]], ["0", null]])],
					["0", true],
				]);
			case "dup":
				return new Pairs([["a", 1], ["b", 2], ["a", new RawNum("3.0")], ["c", [1]], ["b", "second"]]);
			case "duppath":
				return new Pairs([["path", r.pick(PATHS)], ["offset", 1], ["path", r.pick(PATHS)]]);
			case "dupnonstring":
				return new Pairs([["path", r.pick(PATHS)], ["path", 42]]);
			case "keys":
				return new Pairs([
					["kéy", 1],
					['a"b', 2],
					["😀", "emoji"],
					["\u2028", "ls"],
					["a\\b", 3],
					["", 4],
					["\u0000", "nul"],
					["e\u0301", "combining"],
					["__proto__", { path: "src/proto.ts" }],
					["constructor", 5],
					["a/b", "\\/"],
				]);
			case "nested":
				return { path: r.pick(PATHS), opts: { deep: [1, [2, [3, { x: null, y: [] }]], {}], flag: false, s: text(r, 20, 0.2) }, list: [], obj: {} };
			case "empty":
				return {};
			case "nonstringpath":
				return { path: r.pick([42, null, true, ["src/a.ts"], { p: "src/a.ts" }, "", new RawNum("1e21")]) };
			case "specials":
				return { path: r.pick(PATHS), content: text(r, r.int(20, 200), 0.3), "\u2028key": "\u2029value", quote: '"\\"\\', slash: "a/b\\/c" };
			default:
				throw new Error(kind);
		}
	}
	/** One assistant step with tool calls followed by their results. */
	toolStep(opts = {}) {
		const r = this.r;
		const n = opts.calls ?? r.int(1, 3);
		const blocks = [];
		if (r.chance(0.35)) blocks.push({ type: "thinking", thinking: text(r, r.int(10, 200), 0.04), ...(r.chance(0.5) ? { thinkingSignature: "sig" + r.hex(16) } : {}) });
		if (r.chance(0.4)) blocks.push({ type: "text", text: r.chance(0.1) ? "" : text(r, r.int(5, 150), 0.04) });
		const calls = [];
		for (let i = 0; i < n; i++) {
			let name = opts.tool ?? r.pick(["read", "read", "write", "edit", "bash", "grep", "find", "Read", "mcp__fs__read"]);
			let args;
			const w = opts.weird ?? this.opts.weird ?? 0.1;
			if (r.chance(w)) {
				const kind = r.pick(["numbers", "intkeys", "dup", "duppath", "dupnonstring", "keys", "nested", "empty", "nonstringpath", "specials"]);
				if (kind === "duppath" || kind === "dupnonstring" || kind === "nonstringpath" || kind === "specials") name = r.pick(["read", "write", "edit"]);
				args = this.weirdArgs(kind);
			} else args = this.argsFor(name);
			const c = this.call(name, args);
			calls.push(c);
			blocks.push(c);
		}
		if (r.chance(0.05)) blocks.push({ type: "x_server_tool_use", id: "srv1", input: { q: 1 } });
		this.assistant(blocks, opts.stopReason);
		for (const c of calls) {
			if (opts.skipResults) break;
			this.toolResult(c, this.resultBlocks(opts.resultSize), r.chance(0.1));
			if (opts.metaBetween && r.chance(0.3)) this.metadata(1);
		}
		return calls;
	}
	resultBlocks(size) {
		const r = this.r;
		const len = size ?? (r.chance(0.06) ? r.int(2100, 5000) : r.int(0, 300));
		const t = text(r, len, this.opts.special ?? 0.03);
		const k = r.int(0, 19);
		if (k === 0) return [{ type: "image", data: IMG, mimeType: "image/png" }];
		if (k === 1) return [{ type: "text", text: t }, { type: "image", data: IMG, mimeType: "image/jpeg" }];
		if (k === 2) return [];
		if (k === 3) return [{ type: "text", text: "" }];
		if (k === 4) return [{ type: "x_unknown", v: 1 }, { type: "text", text: t }];
		if (k === 5) return splitSafe(r, t, 3).map((s) => ({ type: "text", text: s }));
		return [{ type: "text", text: t }];
	}
	finalText() {
		const r = this.r;
		const blocks = [];
		if (r.chance(0.3)) blocks.push({ type: "thinking", thinking: text(r, r.int(10, 200)) });
		blocks.push({ type: "text", text: text(r, r.int(10, 160), this.opts.special ?? 0.03) });
		if (r.chance(0.1)) blocks.push({ type: "text", text: "" });
		return this.assistant(blocks);
	}
	/** A turn: turn start, some tool steps, maybe a final text. */
	turn(opts = {}) {
		const r = this.r;
		if (opts.metaBefore ?? r.chance(this.opts.meta ?? 0.15)) this.metadata(r.int(1, 4));
		const s = opts.start ?? r.int(0, 19);
		if (s === 0) this.bash();
		else if (s === 1 && !this.v1) this.customMessage();
		else if (s === 2 && !this.v1) this.msg({ role: "custom", customType: "inline", content: r.chance(0.5) ? text(r, 50) : [{ type: "text", text: text(r, 50) }], display: true, timestamp: this.time });
		else this.user();
		const steps = opts.steps ?? r.int(0, this.opts.maxSteps ?? 2);
		for (let i = 0; i < steps; i++) {
			if (opts.metaInside && r.chance(0.3)) this.metadata(r.int(1, 3));
			this.toolStep({ resultSize: opts.resultSize, metaBetween: opts.metaBetween });
		}
		if (!opts.noFinal) this.finalText();
	}
	/** Entries of the current path (objects) */
	pathEntries() {
		return this.pathIds().map((id) => this.byId.get(id));
	}
	compaction(opts = {}) {
		const r = this.r;
		const f = { summary: opts.summary ?? (r.chance(0.05) ? "" : "## Goal\n" + text(r, r.int(30, 400), 0.04)) };
		if (this.v1) {
			f.firstKeptEntryIndex = opts.index;
		} else {
			f.firstKeptEntryId = opts.keptId;
		}
		f.tokensBefore = r.int(1000, 200000);
		if (opts.details ?? r.chance(0.6)) {
			f.details = r.chance(0.85)
				? { readFiles: r.shuffle(PATHS).slice(0, r.int(0, 4)), modifiedFiles: r.shuffle(PATHS).slice(0, r.int(0, 3)) }
				: r.pick([{ readFiles: "src/not-an-array.ts" }, { modifiedFiles: ["src/only-mod.ts"] }, { other: 1 }]);
		}
		if (opts.fromHook ?? r.chance(0.2)) f.fromHook = true;
		return this.add("compaction", f);
	}
	/** choose a firstKeptEntryId for a new compaction at the current leaf (v2/v3) */
	keptIdChoice(mode) {
		const r = this.r;
		const path = this.pathEntries();
		const lastComp = path.map((e) => e.type).lastIndexOf("compaction");
		if (mode === "path") {
			// prefer a message entry in the second half after the previous compaction
			const lo = Math.max(lastComp + 1, Math.floor(path.length / 2));
			const cands = path.slice(lo).filter((e) => e.type === "message" && e.message.role !== "toolResult");
			if (cands.length) return r.pick(cands).id;
			return path.length ? path[path.length - 1].id : "missing0";
		}
		if (mode === "pathany") return path.length ? r.pick(path).id : "missing1";
		if (mode === "beforeprev" && lastComp > 0) return path[r.int(0, lastComp - 1)].id;
		if (mode === "toolresult") {
			const c = path.filter((e) => e.type === "message" && e.message.role === "toolResult");
			if (c.length) return r.pick(c).id;
		}
		if (mode === "other") {
			const on = new Set(this.pathIds());
			const off = [...this.byId.keys()].filter((id) => !on.has(id));
			if (off.length) return r.pick(off);
		}
		if (mode === "future") return this.reserveNext(1); // the entry after the new compaction
		if (mode === "self") return this.reserveNext(0); // the new compaction itself
		return r.pick(["deadbeef", "00000000", "", "missing-" + r.hex(4)]);
	}
}

// ---------------------------------------------------------------------------------------------
// Profiles
// ---------------------------------------------------------------------------------------------
function pickKeptMode(r, tree) {
	const modes = ["path", "path", "path", "pathany", "missing", "beforeprev", "toolresult", "future", "self"];
	if (tree) modes.push("other", "other");
	return r.pick(modes);
}

function endWith(b, r, how) {
	switch (how) {
		case "toolResult":
			b.toolStep({ calls: r.int(1, 3), resultSize: r.chance(0.5) ? r.int(600, 3000) : undefined });
			break;
		case "toolResultBig":
			b.toolStep({ calls: 1, resultSize: r.int(1500, 5000) });
			break;
		case "toolResultMeta":
			b.toolStep({ calls: r.int(1, 2) });
			b.metadata(r.int(1, 3));
			break;
		case "assistantCalls":
			b.toolStep({ calls: 1, skipResults: true });
			break;
		case "user":
			b.user();
			break;
		case "compaction":
			if (b.v1) b.compaction({ index: r.int(1, Math.max(1, b.nextPos - 1)) });
			else b.compaction({ keptId: b.keptIdChoice("path") });
			break;
		case "bash":
			b.bash();
			break;
		case "meta":
			b.metadata(r.int(1, 4));
			break;
		case "custom":
			if (!b.v1) b.customMessage();
			break;
		default:
			break;
	}
}

const ENDINGS = ["none", "none", "toolResult", "toolResult", "toolResultBig", "toolResultMeta", "assistantCalls", "user", "bash", "meta", "custom", "compaction"];

function linearV3(r, opts = {}) {
	const b = new Builder(r, opts.version ?? 3, opts);
	b.header();
	const turns = opts.turns ?? r.int(3, 7);
	for (let t = 0; t < turns; t++) b.turn({ metaInside: opts.metaInside });
	endWith(b, r, opts.ending ?? r.pick(ENDINGS));
	return b;
}

function nestedCompactions(r, opts = {}) {
	const b = new Builder(r, 3, { extraFields: true, ...opts });
	b.header();
	const rounds = r.int(1, 3);
	for (let k = 0; k < rounds; k++) {
		const turns = r.int(2, 4);
		for (let t = 0; t < turns; t++) b.turn();
		if (r.chance(0.4)) b.metadata(r.int(1, 3));
		const mode = k === 0 && r.chance(0.6) ? "path" : pickKeptMode(r, false);
		b.compaction({ keptId: b.keptIdChoice(mode) });
		if (mode === "future" && r.chance(0.5)) {
			// the reserved id is taken by the very next entry
		}
	}
	const after = r.int(0, 4);
	for (let t = 0; t < after; t++) b.turn();
	endWith(b, r, r.pick(ENDINGS));
	return b;
}

function treeSession(r, opts = {}) {
	const b = new Builder(r, opts.version ?? 3, { extraFields: true, ...opts });
	b.header();
	const turns = r.int(2, 5);
	for (let t = 0; t < turns; t++) b.turn();
	const branches = r.int(2, 4);
	for (let k = 0; k < branches; k++) {
		const all = [...b.byId.values()];
		const target = r.chance(0.1) ? null : r.pick(all.filter((e) => e.type === "message") .concat(all)).id;
		const prevLeaf = b.leaf;
		b.leaf = target;
		const kind = r.int(0, 5);
		if (kind <= 1) b.branchSummary(target ?? "root", { summary: kind === 0 ? "" : undefined });
		else if (kind === 2) b.add("x_future_thing", { why: "branch-marker" });
		else if (kind === 3 && r.chance(0.5)) b.metadata(r.int(1, 2));
		void prevLeaf;
		const bt = r.int(1, 4);
		for (let t = 0; t < bt; t++) b.turn();
		if (r.chance(0.35)) {
			b.compaction({ keptId: b.keptIdChoice(pickKeptMode(r, true)) });
			const at = r.int(0, 2);
			for (let t = 0; t < at; t++) b.turn();
		}
		if (r.chance(0.3)) endWith(b, r, r.pick(ENDINGS));
	}
	if (r.chance(0.3)) {
		// an orphan whose parent does not exist
		b.leaf = "nonexistent-" + r.hex(4);
		b.user();
		b.finalText();
	}
	if (r.chance(0.5)) {
		// continue somewhere old again so the default leaf is not the longest branch
		b.leaf = r.pick([...b.byId.keys()]);
		b.turn();
	}
	return b;
}

function v1Session(r, opts = {}) {
	const b = new Builder(r, 1, opts);
	if (!opts.headerless) b.header(opts.headerNoId ? { noId: true } : {});
	const rounds = r.int(1, 3);
	const pending = [];
	for (let k = 0; k < rounds; k++) {
		const turns = r.int(2, 5);
		for (let t = 0; t < turns; t++) b.turn({ start: r.chance(0.1) ? 0 : 5 });
		const kind = opts.indexKind ?? r.pick(["back", "back", "back", "forward", "header", "out", "self", "negative", "toolresult", "string", "frac"]);
		const pos = b.nextPos;
		let index;
		if (kind === "back") {
			const cands = [];
			for (let i = Math.max(1, Math.floor(pos / 2)); i < pos; i++) {
				const e = b.items[i];
				if (e.type === "message" && e.message.role !== "toolResult") cands.push(i);
			}
			index = cands.length ? r.pick(cands) : pos - 1;
		} else if (kind === "forward") {
			index = pos + r.int(1, 4);
			pending.push(index);
		} else if (kind === "header") index = 0;
		else if (kind === "out") index = r.pick([pos + 100000, 99999999]);
		else if (kind === "self") index = pos;
		else if (kind === "negative") index = -1;
		else if (kind === "toolresult") {
			const c = [];
			for (let i = 1; i < pos; i++) if (b.items[i].type === "message" && b.items[i].message.role === "toolResult") c.push(i);
			index = c.length ? r.pick(c) : 1;
		} else if (kind === "string") index = String(Math.max(1, pos - 3));
		else index = pos - 1.5;
		b.compaction({ index });
	}
	const after = r.int(0, 4);
	for (let t = 0; t < after; t++) b.turn();
	// make sure a forward index lands on something
	while (pending.length && b.nextPos <= Math.max(...pending)) b.turn({ steps: 1 });
	endWith(b, r, r.pick(["none", "none", "toolResult", "user", "bash", "meta", "compaction", "toolResultBig"]));
	return b;
}

function v2Session(r) {
	const b = new Builder(r, 2, { extraFields: true });
	b.header();
	const turns = r.int(3, 7);
	for (let t = 0; t < turns; t++) {
		b.turn();
		if (r.chance(0.5)) {
			b.msg({ role: "hookMessage", customType: "hook:" + r.pick(["lint", "𝒳"]), content: r.chance(0.5) ? text(r, r.int(10, 200)) : [{ type: "text", text: text(r, 60) }, { type: "image", data: IMG, mimeType: "image/png" }], display: r.chance(0.5), timestamp: b.time });
		}
	}
	if (r.chance(0.6)) {
		b.leaf = r.pick([...b.byId.keys()]);
		b.branchSummary(b.leaf);
		b.turn();
	}
	if (r.chance(0.5)) b.compaction({ keptId: b.keptIdChoice("path") });
	if (r.chance(0.7)) b.turn();
	endWith(b, r, r.pick(ENDINGS));
	return b;
}

function bigTurn(r) {
	const b = new Builder(r, r.chance(0.85) ? 3 : 1, { extraFields: true });
	b.header();
	const pre = r.int(0, 3);
	for (let t = 0; t < pre; t++) b.turn();
	if (!b.v1 && r.chance(0.3)) b.compaction({ keptId: b.keptIdChoice("path") });
	b.turn({ steps: r.int(10, 24), noFinal: r.chance(0.5), metaInside: r.chance(0.5), metaBetween: r.chance(0.3), start: r.pick([0, 1, 5, 5, 5]) });
	endWith(b, r, r.pick(["none", "toolResult", "toolResultBig", "assistantCalls", "toolResultMeta"]));
	return b;
}

/** tool results around the 2000-unit truncation boundary (D5) */
function truncationSession(r, variant) {
	const b = new Builder(r, 3, { special: 0.02 });
	b.header();
	const specs = [];
	// each spec: [units, astralAt]
	const menu = [
		[1999, -1],
		[2000, -1],
		[2001, -1],
		[2001, 1999], // D5: pair split by the cut
		[2002, 1999], // D5
		[r.int(2100, 6000), 1999], // D5
		[2001, 1998], // pair ends exactly at 2000: clean cut
		[2000, 1998], // exactly 2000 with a pair at the end: no truncation
		[2002, 2000], // pair right after the cut
		[1999, 1997],
	];
	if (variant % 2 === 0) specs.push(menu[3], menu[r.int(0, 2)], menu[r.int(6, 9)]);
	else specs.push(menu[r.int(3, 5)], menu[r.int(0, 9)], menu[r.int(0, 9)]);
	b.turn({ steps: r.int(0, 1) });
	for (const [units, at] of specs) {
		b.user();
		const c = b.toolStep({ calls: 1, skipResults: true, weird: 0 });
		const s = exactText(r, units, at);
		const k = r.int(0, 3);
		let blocks;
		if (k === 0) blocks = [{ type: "text", text: s }];
		else if (k === 1) blocks = splitSafe(r, s, 2).map((t) => ({ type: "text", text: t }));
		else if (k === 2) blocks = [{ type: "image", data: IMG, mimeType: "image/png" }, ...splitSafe(r, s, 3).map((t) => ({ type: "text", text: t }))];
		else blocks = [{ type: "text", text: s.slice(0, 0) }, { type: "text", text: s }];
		b.toolResult(c[0], blocks, r.chance(0.2));
		b.finalText();
	}
	// a few more turns so that small keep budgets cut after the long results
	const more = r.int(1, 3);
	for (let t = 0; t < more; t++) b.turn({ steps: 1 });
	endWith(b, r, r.pick(["none", "toolResult", "user"]));
	return b;
}

const BASH_COMBOS = [];
for (const output of ["", "out"])
	for (const cancelled of [false, true])
		for (const exitCode of [0, 1, null, "absent"])
			for (const tr of ["no", "no-path", "yes-path", "yes-nopath"])
				for (const ex of [undefined, false, true]) BASH_COMBOS.push({ output, cancelled, exitCode, tr, ex });

/** bashExecution flag matrix: file k covers combos [10k, 10k + 10) (all 192 over the profile's files) + random ones */
function bashMatrix(r, k) {
	const b = new Builder(r, r.chance(0.8) ? 3 : 1, {});
	b.header();
	const chosen = [];
	for (let i = 0; i < 10; i++) chosen.push(BASH_COMBOS[(k * 10 + i) % BASH_COMBOS.length]);
	for (let i = r.int(0, 4); i > 0; i--) chosen.push(r.pick(BASH_COMBOS));
	for (const c of r.shuffle(chosen)) {
		if (r.chance(0.4)) b.turn({ steps: r.int(0, 1) });
		b.bash({
			output: c.output === "" ? "" : text(r, r.int(5, 300), 0.05),
			cancelled: c.cancelled,
			exitCode: c.exitCode,
			truncated: c.tr.startsWith("yes"),
			fullOutputPath: c.tr === "yes-path" || c.tr === "no-path",
			excludeFromContext: c.ex === undefined ? "absent" : c.ex,
		});
	}
	b.turn();
	endWith(b, r, r.pick(["bash", "none", "toolResult"]));
	return b;
}

function customHeavy(r) {
	const b = new Builder(r, 3, { extraFields: true });
	b.header();
	const n = r.int(4, 9);
	for (let i = 0; i < n; i++) {
		const k = r.int(0, 7);
		if (k === 0) b.customMessage({ display: false });
		else if (k === 1) b.customMessage({ display: true, content: [{ type: "image", data: IMG, mimeType: "image/png" }] });
		else if (k === 2) b.msg({ role: "x_unknown_role", content: text(r, 100), timestamp: b.time });
		else if (k === 3) b.msg({ role: "branchSummary", summary: text(r, 200), fromId: "abc", timestamp: b.time });
		else if (k === 4) b.msg({ role: "compactionSummary", summary: text(r, 200), tokensBefore: 5000, timestamp: b.time });
		else if (k === 5) b.msg({ role: "hookMessage", customType: "legacy", content: text(r, 80), display: true, timestamp: b.time });
		else if (k === 6) b.branchSummary(b.leaf, { summary: r.chance(0.5) ? "" : undefined });
		else b.msg({ role: "system", content: "You are 𝒳", timestamp: b.time });
		b.turn({ start: r.pick([1, 2, 5, 5]) });
	}
	endWith(b, r, r.pick(["custom", "none", "toolResult"]));
	return b;
}

function metadataRuns(r) {
	const b = new Builder(r, r.chance(0.85) ? 3 : 1, { meta: 0.8, extraFields: true });
	b.header();
	const turns = r.int(4, 9);
	for (let t = 0; t < turns; t++) b.turn({ metaBefore: true, metaInside: true });
	endWith(b, r, r.pick(["toolResultMeta", "meta", "toolResult", "none"]));
	return b;
}

function usageVariety(r) {
	const b = new Builder(r, 3, {});
	b.header();
	const turns = r.int(3, 8);
	for (let t = 0; t < turns; t++) {
		b.turn();
		if (r.chance(0.4)) b.assistant([{ type: "text", text: text(r, 40) }], r.pick(["aborted", "error"]));
	}
	if (r.chance(0.5)) b.assistant([{ type: "text", text: "" }], r.pick(["aborted", "error", "stop"]));
	endWith(b, r, r.pick(ENDINGS));
	return b;
}

function unicodeArgs(r) {
	const b = new Builder(r, 3, { special: 0.25, weird: 0.6, extraFields: true });
	b.header();
	const turns = r.int(3, 7);
	for (let t = 0; t < turns; t++) b.turn();
	endWith(b, r, r.pick(ENDINGS));
	return b;
}

function mixed(r) {
	const gens = [linearV3, nestedCompactions, treeSession, v1Session, v2Session, bigTurn, bashMatrix, customHeavy, metadataRuns, usageVariety, unicodeArgs];
	const g = r.pick(gens);
	return g === bashMatrix ? bashMatrix(r, r.int(0, 100)) : g(r, {});
}

function treeCompactD1(r) {
	const b = treeSession(r, { weird: 0.15 });
	// end on trailing tool results so small budgets hit D1
	b.toolStep({ calls: r.int(1, 3), resultSize: r.int(200, 2500) });
	if (r.chance(0.3)) b.metadata(r.int(1, 2));
	return b;
}

const PROFILES = [
	(r) => linearV3(r, { extraFields: true }),
	(r) => treeSession(r),
	(r) => nestedCompactions(r),
	(r) => v1Session(r),
	(r) => v2Session(r),
	(r) => bigTurn(r),
	(r, n) => truncationSession(r, n),
	(r) => unicodeArgs(r),
	(r) => linearV3(r, { weird: 0.5, special: 0.1, ending: "toolResult" }),
	(r, n) => bashMatrix(r, Math.floor(n / 16)),
	(r) => customHeavy(r),
	(r) => metadataRuns(r),
	(r) => usageVariety(r),
	(r) => nestedCompactions(r, { weird: 0.2 }),
	(r) => mixed(r),
	(r) => treeCompactD1(r),
];

// Hand-written special cases for the first files
function special(n, r) {
	switch (n) {
		case 1: {
			const b = new Builder(r, 3, {});
			b.header();
			return { b };
		}
		case 2: {
			const b = new Builder(r, 3, {});
			b.header();
			b.metadata(12);
			return { b };
		}
		case 3:
			return { b: v1Session(r, { headerless: true }) };
		case 4: {
			// ids present but no header: the reference treats it as v1 and re-ids everything
			const b = new Builder(r, 3, {});
			for (let t = 0; t < 4; t++) b.turn();
			b.compaction({ keptId: b.keptIdChoice("path") });
			b.turn();
			return { b };
		}
		case 5:
			return { b: v1Session(r, { headerNoId: true }) };
		case 6: {
			const b = new Builder(r, 1, {});
			b.header();
			b.metadata(6);
			return { b };
		}
		case 7: {
			const b = new Builder(r, 3, {});
			b.header();
			b.user(text(r, 100));
			return { b };
		}
		case 8: {
			// no valid cut point at all: only tool results and metadata
			const b = new Builder(r, 3, {});
			b.header();
			for (let i = 0; i < 6; i++) {
				b.toolResult({ id: "orphan" + i, name: "read" }, b.resultBlocks(r.int(100, 900)));
				if (i % 2) b.metadata(1);
			}
			return { b };
		}
		case 9: {
			// blank / whitespace lines, CRLF line ends, leading blank lines
			const b = linearV3(r, { ending: "toolResult" });
			return { b, blankLines: true, crlf: true, leadingBlank: true };
		}
		case 10: {
			// v1 with every firstKeptEntryIndex oddity in one file
			const b = new Builder(r, 1, {});
			b.header();
			for (const kind of ["back", "forward", "header", "self", "out"]) {
				for (let t = 0; t < 2; t++) b.turn({ steps: 1 });
				const pos = b.nextPos;
				const idx = { back: Math.max(1, pos - 4), forward: pos + 3, header: 0, self: pos, out: 1e6 }[kind];
				b.compaction({ index: idx });
			}
			for (let t = 0; t < 3; t++) b.turn({ steps: 1 });
			return { b };
		}
		case 11: {
			// compaction whose firstKeptEntryId is the compaction itself, then one pointing into the future
			const b = new Builder(r, 3, {});
			b.header();
			for (let t = 0; t < 3; t++) b.turn();
			b.compaction({ keptId: b.keptIdChoice("self") });
			b.turn();
			b.compaction({ keptId: b.keptIdChoice("future") });
			b.turn();
			b.turn();
			return { b };
		}
		case 12: {
			// every path read/write/edit, with sort-order traps, summarized then kept
			const b = new Builder(r, 3, {});
			b.header();
			b.user("touch everything");
			for (const p of PATHS) {
				const name = r.pick(["read", "write", "edit"]);
				b.toolStep({ calls: 1, weird: 0, tool: name });
				void p;
			}
			const blocks = PATHS.map((p, i) => b.call(["read", "write", "edit"][i % 3], { path: p }));
			b.assistant(blocks);
			for (const c of blocks) b.toolResult(c, [{ type: "text", text: "ok" }]);
			b.compaction({ keptId: b.keptIdChoice("path"), details: true });
			b.turn();
			b.turn();
			return { b };
		}
		default:
			return null;
	}
}

// ---------------------------------------------------------------------------------------------
// Writing and validation
// ---------------------------------------------------------------------------------------------
function renderFile(r, spec) {
	const { b } = spec;
	const lineMode = b.opts.special >= 0.1 || r.chance(0.15) ? "mixed" : "plain";
	const lines = b.items.map((e) => {
		const sp = lineMode === "mixed" && r.chance(0.2);
		let line = ser(e, sp);
		if (lineMode === "mixed") {
			const k = r.int(0, 5);
			if (k === 0) line = line.replace(/\//g, "\\/"); // "/" only occurs inside strings
			else if (k === 1) line = line.replace(/[\u0080-\uffff]/g, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
			else if (k === 2) line = line.replace(/[\u0080-\uffff]/g, (c) => "\\u" + c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0"));
		}
		return line;
	});
	let out = [];
	for (const l of lines) {
		out.push(l);
		if (spec.blankLines && r.chance(0.2)) out.push(r.pick(["", "   ", "\t"]));
	}
	let s = out.join(spec.crlf ? "\r\n" : "\n") + (spec.crlf ? "\r\n" : "\n");
	if (spec.leadingBlank) s = "\n\n" + s;
	return s;
}

function checkStrings(v, where) {
	if (typeof v === "string") {
		if (!v.isWellFormed()) throw new Error(`lone surrogate in ${where}`);
	} else if (Array.isArray(v)) v.forEach((x, i) => checkStrings(x, where));
	else if (v && typeof v === "object")
		for (const [k, x] of Object.entries(v)) {
			checkStrings(k, where);
			checkStrings(x, where);
		}
}

function validate(name, content) {
	if (!content.isWellFormed()) throw new Error(`${name}: raw text not well-formed`);
	const entries = [];
	for (const line of content.trim().split("\n")) {
		if (!line.trim()) continue;
		const e = JSON.parse(line);
		if (typeof e.type !== "string") throw new Error(`${name}: entry without string type`);
		checkStrings(e, name);
		entries.push(e);
	}
	const header = entries[0]?.type === "session" ? entries[0] : undefined;
	if (entries.slice(1).some((e) => e.type === "session")) throw new Error(`${name}: session entry not first`);
	const version = header?.version ?? 1;
	if (version >= 2) {
		const seen = new Set();
		for (const e of entries) {
			if (e.type === "session") continue;
			if (typeof e.id !== "string" || seen.has(e.id)) throw new Error(`${name}: bad/duplicate id ${e.id}`);
			seen.add(e.id);
			if (!(e.parentId === null || typeof e.parentId === "string")) throw new Error(`${name}: bad parentId`);
			if (typeof e.timestamp !== "string" || Number.isNaN(Date.parse(e.timestamp))) throw new Error(`${name}: bad timestamp`);
		}
		// parent links only point backwards (so no cycles)
		const pos = new Map();
		entries.forEach((e, i) => e.type !== "session" && pos.set(e.id, i));
		entries.forEach((e, i) => {
			if (e.type !== "session" && e.parentId !== null && pos.has(e.parentId) && pos.get(e.parentId) >= i) throw new Error(`${name}: forward parent`);
		});
	}
	for (const e of entries) {
		if (e.type === "message") {
			const m = e.message;
			if (!m || typeof m.role !== "string") throw new Error(`${name}: message without role`);
			if (m.role === "assistant") {
				if (!Array.isArray(m.content)) throw new Error(`${name}: assistant content`);
				for (const bl of m.content) {
					if (bl.type === "toolCall" && (typeof bl.name !== "string" || !bl.arguments || typeof bl.arguments !== "object" || Array.isArray(bl.arguments))) throw new Error(`${name}: toolCall shape`);
					if (bl.type === "text" && typeof bl.text !== "string") throw new Error(`${name}: text block`);
					if (bl.type === "thinking" && typeof bl.thinking !== "string") throw new Error(`${name}: thinking block`);
				}
			}
			if (m.role === "toolResult" && !Array.isArray(m.content)) throw new Error(`${name}: toolResult content`);
			if (m.role === "user" && !(typeof m.content === "string" || Array.isArray(m.content))) throw new Error(`${name}: user content`);
			if (m.role === "bashExecution" && (typeof m.command !== "string" || typeof m.output !== "string")) throw new Error(`${name}: bash`);
		}
		if ((e.type === "compaction" || e.type === "branch_summary") && typeof e.summary !== "string") throw new Error(`${name}: summary`);
		if (e.type === "custom_message" && !(typeof e.content === "string" || Array.isArray(e.content))) throw new Error(`${name}: custom content`);
	}
	return entries.length;
}


// ---------------------------------------------------------------------------------------------
// Coverage audit: count, over the written files, how many contain each required feature.
// ---------------------------------------------------------------------------------------------
const META = new Set(["thinking_level_change", "model_change", "label", "session_info", "custom"]);
const KNOWN_TYPES = new Set(["session", "message", "custom_message", "branch_summary", "compaction", ...META]);
const KNOWN_ROLES = new Set(["user", "assistant", "toolResult", "bashExecution", "custom", "branchSummary", "compactionSummary", "hookMessage"]);
const ENTRY_KEYS = new Set(["type", "id", "parentId", "timestamp", "message", "customType", "content", "display", "details", "fromId", "summary", "fromHook", "firstKeptEntryId", "firstKeptEntryIndex", "tokensBefore", "thinkingLevel", "provider", "modelId", "targetId", "label", "name", "data"]);
const MSG_KEYS = new Set(["role", "content", "timestamp", "provider", "model", "api", "usage", "stopReason", "errorMessage", "toolCallId", "toolName", "isError", "details", "command", "output", "exitCode", "cancelled", "truncated", "fullOutputPath", "excludeFromContext", "customType", "display", "summary", "fromId", "tokensBefore"]);
const REQUIRED_NUMBERS = ["1.5", "1e21", "1E-7", "-0", "0.000001", "123456789012345678901", "9007199254740993", "5e-324", "1.7976931348623157e308"];

function textOf(content) {
	if (typeof content === "string") return content;
	if (!Array.isArray(content)) return "";
	return content.filter((c) => c.type === "text" && typeof c.text === "string").map((c) => c.text).join("");
}
function stringsIn(v, out = []) {
	if (typeof v === "string") out.push(v);
	else if (Array.isArray(v)) v.forEach((x) => stringsIn(x, out));
	else if (v && typeof v === "object") for (const [k, x] of Object.entries(v)) out.push(k), stringsIn(x, out);
	return out;
}
const CHAR_CLASSES = { astral: /[\uD800-\uDBFF]/, combining: /\u0301|\u0303/, u2028: /\u2028/, nul: /\u0000/, u001f: /\u001f/, del: /\u007f/, quote: /"/, backslash: /\\/ };

function auditFile(content) {
	const f = new Set();
	const bash = new Set();
	const entries = content.trim().split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l));
	const header = entries[0]?.type === "session" ? entries[0] : undefined;
	const version = header?.version ?? 1;
	if (!header) f.add("file: headerless");
	else f.add(`file: header v${header.version ?? "1 (no version)"}`);
	if (header && typeof header.id !== "string") f.add("file: header without id");
	const body = header ? entries.slice(1) : entries;
	if (header && body.length === 0) f.add("file: empty session (header only)");
	if (body.length && body.every((e) => e.type !== "message" && e.type !== "custom_message" && e.type !== "branch_summary" && e.type !== "compaction")) f.add("file: metadata-only session");
	if (content.includes("\r\n")) f.add("raw: CRLF");
	if (/\n[ \t]*\n/.test(content.trim()) || /^\s*\n/.test(content)) f.add("raw: blank lines");
	if (content.includes("\\/")) f.add("raw: \\/ escape");
	if (/\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}/.test(content)) f.add("raw: escaped surrogate pair");
	if (/[:,] "/.test(content)) f.add("raw: spaces between tokens");
	for (const n of REQUIRED_NUMBERS) if (new RegExp(`[:,\\[]${n.replace(/[.+]/g, "\\$&")}[,\\]}]`).test(content)) f.add(`raw: number ${n}`);
	if (content.includes('{"a":1,"b":2,"a":3.0')) f.add("raw: duplicate keys");
	if (/"path":"(?:[^"\\]|\\.)*","offset":1,"path":/.test(content)) f.add("raw: duplicate path key");
	if (/"path":"(?:[^"\\]|\\.)*","path":42/.test(content)) f.add("raw: duplicate path key, last non-string");
	const last = body[body.length - 1];
	if (last?.type === "compaction") f.add("file: ends in compaction");
	if (last?.type === "message" && last.message.role === "toolResult") f.add("file: ends in toolResult");

	// v1 compaction indexes
	entries.forEach((e, i) => {
		if (e.type !== "compaction" || !("firstKeptEntryIndex" in e)) return;
		const x = e.firstKeptEntryIndex;
		let k;
		if (typeof x !== "number") k = "non-number";
		else if (!Number.isInteger(x)) k = "non-integer";
		else if (x < 0) k = "negative";
		else if (x >= entries.length) k = "out of range";
		else if (x === 0 && header) k = "header";
		else if (x === i) k = "self";
		else if (x > i) k = "forward";
		else k = "backward";
		f.add(`v1: firstKeptEntryIndex ${k}`);
	});
	// tree structure (v2+)
	if (version >= 2) {
		const byId = new Map(body.map((e) => [e.id, e]));
		const hasChild = new Set(body.filter((e) => e.parentId && byId.has(e.parentId)).map((e) => e.parentId));
		if (body.filter((e) => !hasChild.has(e.id)).length > 1) f.add("tree: several leaves");
		if (body.some((e, i) => e.parentId && byId.has(e.parentId) && body[i - 1] && body[i - 1].id !== e.parentId)) f.add("tree: appended under an earlier parent");
		if (body.some((e) => e.parentId !== null && !byId.has(e.parentId))) f.add("tree: parentId names no entry");
		const ancestors = (e) => {
			const out = [];
			for (let c = e.parentId ? byId.get(e.parentId) : undefined; c; c = c.parentId ? byId.get(c.parentId) : undefined) out.push(c);
			return out;
		};
		for (const e of body) {
			if (e.type !== "compaction") continue;
			const anc = ancestors(e);
			if (anc.some((a) => a.type === "compaction")) f.add("tree: nested compactions on one path");
			const t = byId.get(e.firstKeptEntryId);
			if (!t) f.add("compaction: firstKeptEntryId missing");
			else if (t === e) f.add("compaction: firstKeptEntryId is itself");
			else if (anc.includes(t)) f.add(`compaction: firstKeptEntryId on path${anc.slice(anc.findIndex((a) => a.type === "compaction") + 1).includes(t) && anc.some((a) => a.type === "compaction") ? " (before previous compaction)" : ""}`);
			else if (ancestors(t).includes(e)) f.add("compaction: firstKeptEntryId after it");
			else f.add("compaction: firstKeptEntryId on another branch");
		}
	}
	let run = 0;
	let trInTurn = 0;
	for (const e of body) {
		if (e.type === "message") {
			const m = e.message;
			if (run >= 2 && (m.role === "user" || m.role === "assistant")) f.add("meta: run of >= 2 metadata entries before a user/assistant message");
			run = 0;
			if (Object.keys(m).some((k) => !MSG_KEYS.has(k))) f.add("extra: unknown field on a message");
			if (!KNOWN_ROLES.has(m.role)) f.add("message: unknown role");
			if (m.role === "hookMessage") f.add(`message: hookMessage role (v${version})`);
			if (Array.isArray(m.content) && m.content.some((b) => !["text", "image", "thinking", "toolCall"].includes(b.type))) f.add("message: unknown content block type");
			if (m.role === "user") {
				trInTurn = 0;
				f.add(typeof m.content === "string" ? "user: string content" : "user: block content");
				if (Array.isArray(m.content) && m.content.some((b) => b.type === "image")) f.add("user: image block");
			}
			if (m.role === "user" || m.role === "assistant" || m.role === "toolResult")
				for (const s of stringsIn(m.role === "assistant" ? m.content.filter((b) => b.type !== "toolCall") : m.content)) for (const [k, re] of Object.entries(CHAR_CLASSES)) if (re.test(s)) f.add(`text: ${k}`);
			if (m.role === "assistant") {
				if (m.content.some((b) => b.type === "thinking")) f.add("assistant: thinking block");
				if (m.content.some((b) => b.type === "text" && b.text === "")) f.add("assistant: empty text block");
				if (m.usage && m.usage.totalTokens === 0 && m.usage.input + m.usage.output + m.usage.cacheRead + m.usage.cacheWrite > 0) f.add("usage: totalTokens 0 with components");
				if (m.usage && (m.stopReason === "aborted" || m.stopReason === "error")) f.add(`usage: stopReason ${m.stopReason} with usage`);
				for (const b of m.content) {
					if (b.type !== "toolCall") continue;
					const a = b.arguments;
					const keys = Object.keys(a);
					if (keys.length === 0) f.add("args: empty object");
					if (["read", "write", "edit"].includes(b.name)) f.add(`args: ${b.name} with ${typeof a.path === "string" ? (a.path ? "string" : "empty-string") : "non-string"} path`);
					else f.add("args: other tool");
					if (keys.some((k) => /^(0|[1-9][0-9]*)$/.test(k)) && keys.some((k) => !/^(0|[1-9][0-9]*)$/.test(k))) f.add("args: integer-like keys");
					if (keys.some((k) => /[^\x20-\x7e]/.test(k))) f.add("args: non-ASCII/control key");
					if (JSON.stringify(a).includes('"__proto__"')) f.add("args: __proto__ key");
					if (stringsIn(a).length && JSON.stringify(a).match(/[{[][{[]/)) f.add("args: nested arrays/objects");
					for (const s of stringsIn(a)) for (const [k, re] of Object.entries(CHAR_CLASSES)) if (re.test(s)) f.add(`args: ${k}`);
				}
			}
			if (m.role === "toolResult") {
				trInTurn++;
				if (trInTurn >= 10) f.add("turn: >= 10 tool results in one turn");
				const t = textOf(m.content);
				if ([1999, 2000, 2001].includes(t.length)) f.add(`toolResult: text of ${t.length} units`);
				if (t.length > 2000 && t.charCodeAt(1999) >= 0xd800 && t.charCodeAt(1999) <= 0xdbff) f.add("toolResult: surrogate pair split at 2000 (D5)");
				if (t.length > 2000 && t.charCodeAt(1998) >= 0xd800 && t.charCodeAt(1998) <= 0xdbff) f.add("toolResult: surrogate pair ending at 2000");
				if (m.content.some((b) => b.type === "image")) f.add("toolResult: image block");
				if (m.content.filter((b) => b.type === "text").length > 1) f.add("toolResult: several text blocks");
			}
			if (m.role === "bashExecution") {
				const ec = !("exitCode" in m) ? "absent" : m.exitCode;
				bash.add(JSON.stringify([m.output === "", m.cancelled, ec, m.truncated, "fullOutputPath" in m, m.excludeFromContext]));
			}
			if (m.role === "custom") f.add("message: custom role");
		} else {
			if (META.has(e.type)) f.add(`meta: ${e.type}`);
			if (!KNOWN_TYPES.has(e.type)) f.add("meta: unknown entry type");
			if (META.has(e.type) || !KNOWN_TYPES.has(e.type)) run++;
			else run = 0;
		}
		if (e.type === "custom_message") {
			f.add(`custom_message: ${typeof e.content === "string" ? "string" : "blocks"} content, display ${e.display}`);
			if (Array.isArray(e.content) && e.content.some((b) => b.type === "image")) f.add("custom_message: image block");
		}
		if (e.type === "branch_summary") {
			f.add(`branch_summary: ${e.summary ? "non-empty" : "empty"} summary`);
			if (e.details) f.add("branch_summary: details");
			if (e.fromHook) f.add("branch_summary: fromHook");
		}
		if (e.type === "compaction") {
			if (e.fromHook) f.add("compaction: fromHook");
			if (e.details && Array.isArray(e.details.readFiles) && Array.isArray(e.details.modifiedFiles)) f.add("compaction: details {readFiles, modifiedFiles}");
		}
		if (Object.keys(e).some((k) => !ENTRY_KEYS.has(k)) && KNOWN_TYPES.has(e.type)) f.add("extra: unknown field on an entry");
	}
	return { features: f, bash };
}

function audit(contents) {
	const counts = new Map();
	const bash = new Set();
	for (const c of contents) {
		const r = auditFile(c);
		for (const k of r.features) counts.set(k, (counts.get(k) ?? 0) + 1);
		for (const k of r.bash) bash.add(k);
	}
	const required = [
		"file: headerless", "file: header v3", "file: header v2", "file: header v1 (no version)", "file: header without id",
		"file: empty session (header only)", "file: metadata-only session", "file: ends in compaction", "file: ends in toolResult",
		"raw: CRLF", "raw: blank lines", "raw: \\/ escape", "raw: escaped surrogate pair", "raw: duplicate keys", "raw: duplicate path key",
		"raw: duplicate path key, last non-string", ...REQUIRED_NUMBERS.map((n) => `raw: number ${n}`),
		...["backward", "forward", "header", "out of range", "self"].map((k) => `v1: firstKeptEntryIndex ${k}`),
		"tree: several leaves", "tree: appended under an earlier parent", "tree: parentId names no entry", "tree: nested compactions on one path",
		"compaction: firstKeptEntryId missing", "compaction: firstKeptEntryId on path", "compaction: firstKeptEntryId on another branch",
		"compaction: firstKeptEntryId after it", "compaction: firstKeptEntryId is itself", "compaction: fromHook", "compaction: details {readFiles, modifiedFiles}",
		"message: hookMessage role (v2)", "message: unknown role", "message: unknown content block type", "message: custom role",
		"user: string content", "user: block content", "user: image block", "assistant: thinking block", "assistant: empty text block",
		"usage: totalTokens 0 with components", "usage: stopReason aborted with usage", "usage: stopReason error with usage",
		"args: empty object", "args: read with string path", "args: write with string path", "args: edit with string path",
		"args: read with non-string path", "args: write with non-string path", "args: edit with non-string path", "args: other tool",
		"args: integer-like keys", "args: non-ASCII/control key", "args: nested arrays/objects",
		...Object.keys(CHAR_CLASSES).flatMap((k) => [`text: ${k}`, `args: ${k}`]),
		"turn: >= 10 tool results in one turn", "toolResult: text of 1999 units", "toolResult: text of 2000 units", "toolResult: text of 2001 units",
		"toolResult: surrogate pair split at 2000 (D5)", "toolResult: surrogate pair ending at 2000", "toolResult: image block",
		"custom_message: string content, display true", "custom_message: string content, display false", "custom_message: blocks content, display true",
		"custom_message: blocks content, display false", "custom_message: image block",
		"branch_summary: empty summary", "branch_summary: non-empty summary", "branch_summary: details", "branch_summary: fromHook",
		...[...META].map((t) => `meta: ${t}`), "meta: unknown entry type", "meta: run of >= 2 metadata entries before a user/assistant message",
		"extra: unknown field on an entry", "extra: unknown field on a message",
	];
	const missing = required.filter((k) => !counts.get(k));
	const bashMissing = BASH_COMBOS.filter((c) => !bash.has(JSON.stringify([c.output === "", c.cancelled, c.exitCode, c.tr.startsWith("yes"), c.tr === "yes-path" || c.tr === "no-path", c.ex])));
	return { counts, missing, bashCombos: BASH_COMBOS.length - bashMissing.length, bashMissing };
}

function main() {
	fs.mkdirSync(OUT, { recursive: true });
	for (const f of fs.readdirSync(OUT)) if (/^gen-\d+\.jsonl$/.test(f)) fs.unlinkSync(path.join(OUT, f));
	const contents = [];
	let total = 0;
	let min = Infinity;
	let max = 0;
	for (let n = 1; n <= COUNT; n++) {
		const r = new Rng((MASTER_SEED ^ Math.imul(n, 0x9e3779b1)) >>> 0);
		let spec = special(n, r);
		if (!spec) {
			let b = PROFILES[n % PROFILES.length](r, n);
			// keep files small-ish: regenerate (same stream continues) while over the limit
			let tries = 0;
			while (Buffer.byteLength(renderFile(new Rng(n), { b })) > 36000 && tries++ < 30) b = PROFILES[n % PROFILES.length](r, n);
			spec = { b };
		}
		if (r.chance(0.04)) spec.blankLines = true;
		if (r.chance(0.02)) spec.crlf = true;
		const content = renderFile(r, spec);
		const name = `gen-${String(n).padStart(3, "0")}.jsonl`;
		validate(name, content);
		fs.writeFileSync(path.join(OUT, name), content);
		contents.push(content);
		const size = Buffer.byteLength(content);
		total += size;
		min = Math.min(min, size);
		max = Math.max(max, size);
	}
	const a = audit(contents);
	if (process.argv.includes("--coverage")) for (const [k, v] of [...a.counts].sort()) console.log(`${String(v).padStart(4)}  ${k}`);
	console.log(`coverage: ${a.counts.size} features, bashExecution flag combinations ${a.bashCombos}/${BASH_COMBOS.length}`);
	if (a.missing.length || a.bashMissing.length) throw new Error(`corpus misses required features: ${JSON.stringify(a.missing)} ${JSON.stringify(a.bashMissing)}`);
	console.log(`generated ${COUNT} sessions into ${path.relative(process.cwd(), OUT) || "."}: total ${(total / 1e6).toFixed(2)} MB, min ${min} B, max ${max} B`);
}

main();
