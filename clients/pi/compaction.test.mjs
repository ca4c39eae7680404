// The real pi (@mariozechner/pi-coding-agent 0.73.1, pinned in package-lock.json) in RPC mode
// with compactd's extension (compactd.ts, the file the README shows) loaded by `pi -e`, against
// a compactd built from this checkout and a fake OpenAI-compatible model (fakes.mjs).
//
// For each of two compaction settings: pi's automatic compactions and one `/compact` with
// instructions go through compactd; pi's session file holds compactd's answer exactly, its
// cut is the one pi's own code makes with pi's settings, and its file lists are what pi alone
// accumulates, every round. Then compactd answers 500, hangs past the extension's timeout, and
// is down: each time pi compacts by itself, reports no extension error, and goes on.
//
// Run by test.sh (which installs the pinned packages and sets PI_PACKAGE).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import { CompactdProxy, FakeModel, textOf } from "./fakes.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const PI = process.env.PI_PACKAGE;
const BIN = process.env.COMPACTD_TEST_BIN;
assert.ok(PI && BIN, "run through clients/pi/test.sh (PI_PACKAGE and COMPACTD_TEST_BIN)");
const compaction = (file) => import(pathToFileURL(join(PI, "dist/core/compaction", file)).href);
const { prepareCompaction } = await compaction("compaction.js");
const { computeFileLists } = await compaction("utils.js");

/** How long the extension waits for compactd in this test before pi compacts by itself. */
const TIMEOUT_MS = 3000;

const freePort = () =>
	new Promise((resolve) => {
		const s = http.createServer().listen(0, "127.0.0.1", () => {
			const { port } = s.address();
			s.close(() => resolve(port));
		});
	});

async function startCompactd(work, modelBase) {
	const config = join(work, "compactd.toml");
	// No summary cache: every compaction reaches the fake model.
	writeFileSync(
		config,
		`summarizer = "openai"\nfallback = "none"\nretries = 0\ncache_entries = 0\n\n[[models]]\nname = "fake"\nkind = "openai"\nmodel = "fake-summarizer"\nbase_url = "${modelBase}/compactd/v1"\n`,
	);
	const port = await freePort();
	const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("COMPACTD_")));
	const child = spawn(BIN, ["serve", "--config", config, "--listen", `127.0.0.1:${port}`], { env, stdio: "ignore" });
	const base = `http://127.0.0.1:${port}`;
	for (let i = 0; i < 200; i++) {
		try {
			if ((await fetch(`${base}/readyz`)).ok) return { child, base };
		} catch {}
		await new Promise((r) => setTimeout(r, 50));
	}
	child.kill();
	throw new Error("compactd did not start");
}

/** pi in RPC mode: commands as JSON lines on stdin, responses and events on stdout. */
class Pi {
	constructor({ cwd, agentDir, sessionDir, session, compactdUrl }) {
		this.events = [];
		this.waiters = [];
		this.stderr = "";
		this.child = spawn(
			process.execPath,
			[join(PI, "dist/cli.js"), "--mode", "rpc", "-e", join(HERE, "compactd.ts"), "--provider", "fake", "--model", "fake-model", "--session-dir", sessionDir, ...(session ? ["--session", session] : [])],
			{
				cwd,
				env: { ...process.env, PI_CODING_AGENT_DIR: agentDir, COMPACTD_URL: compactdUrl, COMPACTD_TIMEOUT_MS: String(TIMEOUT_MS) },
				stdio: ["pipe", "pipe", "pipe"],
			},
		);
		let buffer = "";
		this.child.stdout.on("data", (data) => {
			buffer += data;
			// pi's framing: records end at LF only (JSON strings may hold U+2028).
			for (let nl = buffer.indexOf("\n"); nl >= 0; nl = buffer.indexOf("\n")) {
				const line = buffer.slice(0, nl).replace(/\r$/, "");
				buffer = buffer.slice(nl + 1);
				if (!line.trim()) continue;
				this.events.push(JSON.parse(line));
				this.#wake();
			}
		});
		this.child.stderr.on("data", (d) => (this.stderr += d));
		this.exited = null;
		this.child.on("exit", (code) => {
			this.exited = code;
			for (const w of this.waiters) w.fail(new Error(`pi exited (${code}); stderr: ${this.stderr.slice(-2000)}`));
			this.waiters = [];
		});
		this.nextId = 0;
	}

	#wake() {
		this.waiters = this.waiters.filter((w) => {
			const found = this.events.slice(w.from).find(w.match);
			if (found) w.resolve(found);
			return !found;
		});
	}

	/** The first event from position `from` on that `match` accepts. */
	waitFor(match, from, what, ms = 60_000) {
		const found = this.events.slice(from).find(match);
		if (found) return Promise.resolve(found);
		if (this.exited !== null) return Promise.reject(new Error(`pi exited (${this.exited}); stderr: ${this.stderr.slice(-2000)}`));
		return new Promise((resolve, reject) => {
			const timer = setTimeout(() => reject(new Error(`pi: no ${what} within ${ms} ms; stderr: ${this.stderr.slice(-2000)}`)), ms);
			this.waiters.push({
				match,
				from,
				resolve: (e) => (clearTimeout(timer), resolve(e)),
				fail: (err) => (clearTimeout(timer), reject(err)),
			});
		});
	}

	async command(cmd) {
		const id = `c${++this.nextId}`;
		const from = this.events.length;
		this.child.stdin.write(`${JSON.stringify({ ...cmd, id })}\n`);
		const res = await this.waitFor((e) => e.type === "response" && e.id === id, from, `answer to ${cmd.type}`);
		assert.ok(res.success, `${cmd.type}: ${JSON.stringify(res)}`);
		return res.data;
	}

	/** Sends a prompt and waits for the agent to finish, and for the compaction it sets off. */
	async prompt(message, { compacts }) {
		const from = this.events.length;
		await this.command({ type: "prompt", message });
		await this.waitFor((e) => e.type === "agent_end", from, "agent_end");
		if (compacts) return this.waitFor((e) => e.type === "compaction_end", from, "compaction_end");
		return null;
	}

	stop() {
		this.child.kill();
	}
}

/** The session file's entries (without the header), and a lookup by id. */
function readSession(file) {
	const lines = readFileSync(file, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
	const entries = lines.filter((e) => e.type !== "session");
	return { entries, byId: new Map(entries.map((e) => [e.id, e])) };
}

/** The path from the root to `leafId`, oldest first. */
function pathTo(byId, leafId) {
	const path = [];
	for (let e = byId.get(leafId); e; e = e.parentId ? byId.get(e.parentId) : undefined) path.unshift(e);
	return path;
}

/** pi's own file lists for a path: what `prepareCompaction` gathers, as `computeFileLists` lists it. */
function pisLists(path, settings) {
	const { readFiles, modifiedFiles } = computeFileLists(prepareCompaction(path, settings).fileOps);
	return { readFiles, modifiedFiles };
}

/**
 * One pi, one compactd, one fake model and one workspace, with these pi compaction settings;
 * pi opens `session` (a copy of it) when one is given, else a new session.
 */
class Rig {
	async start({ contextWindow, settings, fileChars = 1000, session }) {
		this.settings = settings;
		this.contextWindow = contextWindow;
		this.work = mkdtempSync(join(tmpdir(), "compactd-pi-"));
		const cwd = join(this.work, "project");
		const agentDir = join(this.work, "agent");
		mkdirSync(cwd);
		mkdirSync(agentDir);
		for (let i = 1; i <= 400; i++) {
			const path = `f${String(i).padStart(3, "0")}.txt`;
			const line = `line of ${path}: the quick brown fox jumps over the lazy dog.\n`;
			writeFileSync(join(cwd, path), `header of ${path}\n${line.repeat(Math.ceil(fileChars / line.length))}`);
		}
		this.fake = new FakeModel();
		const modelBase = await this.fake.listen();
		this.compactd = await startCompactd(this.work, modelBase);
		this.proxy = new CompactdProxy(this.compactd.base);
		const proxyUrl = await this.proxy.listen();
		writeFileSync(
			join(agentDir, "models.json"),
			JSON.stringify({
				providers: {
					fake: {
						baseUrl: `${modelBase}/agent/v1`,
						api: "openai-completions",
						apiKey: "fake-key",
						compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
						models: [{ id: "fake-model", name: "Fake", reasoning: false, input: ["text"], contextWindow, maxTokens: 4096, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 } }],
					},
				},
			}),
		);
		writeFileSync(join(agentDir, "settings.json"), JSON.stringify({ compaction: settings }));
		let opened;
		if (session) {
			// pi refuses a session whose working directory is gone: the copy's is the project's.
			opened = join(this.work, "opened.jsonl");
			const [header, ...rest] = readFileSync(session, "utf8").split("\n");
			writeFileSync(opened, [JSON.stringify({ ...JSON.parse(header), cwd }), ...rest].join("\n"));
		}
		this.pi = new Pi({ cwd, agentDir, sessionDir: join(this.work, "sessions"), session: opened, compactdUrl: proxyUrl });
		this.sessionFile = (await this.pi.command({ type: "get_state" })).sessionFile;
		this.fileNo = 0;
	}

	stop() {
		this.pi?.stop();
		this.proxy?.close();
		this.compactd?.child.kill();
		this.fake?.close();
		if (this.work) rmSync(this.work, { recursive: true, force: true });
	}

	/** One turn of file work: reads two files, and edits one or writes a new one; whether
	 * pi compacted after it (it does when the last answer reported more than its threshold). */
	async turn() {
		const next = () => `f${String(++this.fileNo).padStart(3, "0")}.txt`;
		const a = next();
		const b = next();
		const extra = this.fileNo % 4 === 0 ? ` and edit ${a}` : ` and write new-${this.fileNo}.txt`;
		const events = this.pi.events.length;
		await this.pi.prompt(`Please read ${a} and read ${b}${extra}.`, { compacts: false });
		const compacts = this.fake.lastUsage.total_tokens > this.contextWindow - this.settings.reserveTokens;
		if (compacts) await this.pi.waitFor((e) => e.type === "compaction_end", events, "compaction_end");
		return compacts;
	}

	/** The newest compaction entry and the path before it. */
	latestCompaction() {
		const { entries, byId } = readSession(this.sessionFile);
		const entry = entries.filter((e) => e.type === "compaction").at(-1);
		return { entry, before: pathTo(byId, entry.parentId), byId };
	}

	/** Whether pi's own preparation of the current path has messages before its cut. */
	somethingToSummarize() {
		const { entries, byId } = readSession(this.sessionFile);
		const prep = prepareCompaction(pathTo(byId, entries.at(-1).id), this.settings);
		return prep !== undefined && prep.messagesToSummarize.length + prep.turnPrefixMessages.length > 0;
	}

	/** What every compaction compactd made must hold; the stored entry. */
	checkCompactdRound(exchange) {
		const { entry, before, byId } = this.latestCompaction();
		const answer = exchange.response;
		assert.equal(exchange.status, 200, JSON.stringify(answer));
		// pi stored compactd's answer as it came.
		assert.equal(entry.fromHook, true);
		assert.equal(entry.summary, answer.summary);
		assert.equal(entry.firstKeptEntryId, answer.firstKeptEntryId);
		assert.equal(entry.tokensBefore, answer.tokensBefore);
		assert.deepEqual(entry.details, answer.details);
		assert.match(entry.summary, /COMPACTD-SUMMARY-\d+/);
		// The extension sent pi's own settings, and compactd cut where pi's code cuts.
		assert.deepEqual(exchange.request.settings, this.settings);
		const pis = prepareCompaction(before, this.settings);
		assert.equal(entry.firstKeptEntryId, pis.firstKeptEntryId, "the cut pi makes with its settings");
		assert.equal(entry.tokensBefore, pis.tokensBefore);
		assert.ok(pathTo(byId, entry.id).some((e) => e.id === entry.firstKeptEntryId), "the first kept entry is on the path");
		// The lists are what pi alone would list: pi's own code over the same path, had pi
		// written compactd's earlier entries itself.
		const asIfPis = before.map((e) => (e.type === "compaction" && e.fromHook ? { ...e, fromHook: undefined } : e));
		const lists = pisLists(asIfPis, this.settings);
		assert.deepEqual({ readFiles: entry.details.readFiles, modifiedFiles: entry.details.modifiedFiles }, lists);
		return entry;
	}

	/** pi compacted by itself: its own entry and summary, with the file lists of compactd's
	 * rounds before it, and no extension error. */
	checkFallback(from) {
		const { entry, before } = this.latestCompaction();
		assert.notEqual(entry.fromHook, true, "pi's own compaction");
		assert.match(entry.summary, /PI-OWN-SUMMARY/);
		const asIfPis = before.map((e) => (e.type === "compaction" && e.fromHook ? { ...e, fromHook: undefined } : e));
		assert.deepEqual(entry.details, pisLists(asIfPis, this.settings));
		const errors = this.pi.events.slice(from).filter((e) => e.type === "extension_error" || (e.type === "compaction_end" && e.errorMessage));
		assert.deepEqual(errors, []);
	}

	/** The agent's next request carries this summary, and gets an answer. */
	async goesOn(summary) {
		const before = this.fake.requests.length;
		await this.pi.prompt("What is next?", { compacts: false });
		const sent = this.fake.requests.slice(before).find((r) => r.route === "agent");
		assert.ok(sent, "pi asked its model again");
		assert.ok(sent.body.messages.some((m) => textOf(m.content).includes(summary)), "the summary is in pi's context");
	}
}

/** Automatic and manual compactions, then compactd failing, hanging and down. */
function scenario({ name, ...setup }) {
	describe(name, { concurrency: false }, () => {
		const rig = new Rig();
		const rounds = []; // compactd's automatic compactions: {entry, exchange}
		before(() => rig.start(setup));
		after(() => rig.stop());

		test("automatic compactions go through compactd, and their file lists carry over", async () => {
			for (let turns = 0; rounds.length < 3; turns++) {
				assert.ok(turns < 120, "three automatic compactions within 120 turns");
				const exchanges = rig.proxy.exchanges.length;
				if (!(await rig.turn())) continue;
				assert.equal(rig.proxy.exchanges.length, exchanges + 1, "the compaction went to compactd");
				const exchange = rig.proxy.exchanges.at(-1);
				rounds.push({ entry: rig.checkCompactdRound(exchange), exchange });
				await rig.goesOn(exchange.response.summary);
			}
			// Carried over: every round lists what the one before listed, and more.
			for (let i = 1; i < rounds.length; i++) {
				const [prev, cur] = [rounds[i - 1].entry.details, rounds[i].entry.details];
				const all = (d) => new Set([...d.readFiles, ...d.modifiedFiles]);
				for (const f of all(prev)) assert.ok(all(cur).has(f), `round ${i + 1} still lists ${f}`);
				assert.ok(all(cur).size > all(prev).size, `round ${i + 1} lists more files`);
			}
		});

		test("the agent's recall tool finds what the compactions took out of its context", async () => {
			const before = rig.fake.requests.length;
			await rig.pi.prompt("recall f001.txt", { compacts: false });
			const sent = rig.fake.requests.slice(before).filter((r) => r.route === "agent");
			const answer = sent.flatMap((r) => r.body.messages).find((m) => m.role === "tool" && m.tool_call_id?.endsWith("_recall"));
			assert.ok(answer, "the tool's answer reached the model");
			const text = textOf(answer.content);
			assert.match(text, /^\[[0-9a-f]{8}\] (user|assistant|toolResult)/, text);
			assert.ok(text.includes("f001.txt"), text);
			// Every match is an entry the latest compaction took out of the context.
			const { entry, byId } = rig.latestCompaction();
			const path = pathTo(byId, entry.parentId);
			const compacted = new Set(path.slice(0, path.findIndex((e) => e.id === entry.firstKeptEntryId)).map((e) => e.id));
			const ids = [...text.matchAll(/^\[([0-9a-f]{8})\]/gm)].map((m) => m[1]);
			assert.ok(ids.length > 0 && ids.every((id) => compacted.has(id)), `${ids} in the compacted part`);
		});

		test("a manual compaction with instructions goes through compactd", async () => {
			await rig.turn();
			await rig.turn();
			const exchanges = rig.proxy.exchanges.length;
			const summaries = rig.fake.requests.filter((r) => r.route === "compactd").length;
			const instructions = "Keep every file name that was edited.";
			const result = await rig.pi.command({ type: "compact", customInstructions: instructions });
			assert.equal(rig.proxy.exchanges.length, exchanges + 1);
			const exchange = rig.proxy.exchanges.at(-1);
			assert.equal(exchange.request.customInstructions, instructions);
			const entry = rig.checkCompactdRound(exchange);
			assert.equal(result.summary, entry.summary);
			const asked = rig.fake.requests.filter((r) => r.route === "compactd").slice(summaries);
			assert.ok(asked.some((r) => r.body.messages.some((m) => textOf(m.content).includes(instructions))), "compactd's model saw the instructions");
			await rig.goesOn(entry.summary);
		});

		test("compactd answering 500: pi compacts by itself, quietly", async () => {
			await rig.proxy.setMode("error");
			const from = rig.pi.events.length;
			const attempts = rig.proxy.attempts;
			let compacted = false;
			for (let turns = 0; !compacted; turns++) {
				assert.ok(turns < 40, "an automatic compaction within 40 turns");
				compacted = await rig.turn();
			}
			assert.equal(rig.proxy.attempts, attempts + 1, "the extension asked compactd first");
			rig.checkFallback(from);
			await rig.goesOn("PI-OWN-SUMMARY");
		});

		test("compactd hanging past the timeout: pi compacts by itself, quietly", async () => {
			await rig.proxy.setMode("hang");
			await rig.turn();
			const from = rig.pi.events.length;
			const attempts = rig.proxy.attempts;
			const started = Date.now();
			await rig.pi.command({ type: "compact" });
			assert.equal(rig.proxy.attempts, attempts + 1);
			assert.ok(Date.now() - started >= TIMEOUT_MS - 100, "pi waited for the extension's timeout");
			rig.checkFallback(from);
			await rig.goesOn("PI-OWN-SUMMARY");
		});

		test("compactd down: pi compacts by itself, quietly", async () => {
			await rig.proxy.setMode("down");
			await rig.turn();
			const from = rig.pi.events.length;
			await rig.pi.command({ type: "compact" });
			rig.checkFallback(from);
			await rig.goesOn("PI-OWN-SUMMARY");
			// And when compactd is back, the next compaction is compactd's again, with the lists
			// of pi's own rounds carried on. Right after pi's own compaction everything may still
			// fit keepRecentTokens, and compactd refuses to summarize nothing (D4): work on until
			// pi's own preparation has something before its cut.
			await rig.proxy.setMode("forward");
			for (let turns = 0; ; turns++) {
				assert.ok(turns < 20, "something to summarize within 20 turns");
				const exchanges = rig.proxy.exchanges.length;
				if (await rig.turn()) {
					// An automatic compaction: it went to compactd.
					assert.equal(rig.proxy.exchanges.length, exchanges + 1);
					rig.checkCompactdRound(rig.proxy.exchanges.at(-1));
					continue;
				}
				if (rig.somethingToSummarize()) break;
			}
			const exchanges = rig.proxy.exchanges.length;
			await rig.pi.command({ type: "compact" });
			assert.equal(rig.proxy.exchanges.length, exchanges + 1);
			rig.checkCompactdRound(rig.proxy.exchanges.at(-1));
			assert.deepEqual(rig.pi.events.filter((e) => e.type === "extension_error"), []);
		});
	});
}

test("the README's extension snippets are the extension CI loads", () => {
	const readme = readFileSync(join(HERE, "../../README.md"), "utf8");
	const source = readFileSync(join(HERE, "compactd.ts"), "utf8");
	let from = readme.indexOf("**A pi extension.**");
	// The compaction handler, then the recall tool.
	for (const shows of ["the handler", "the recall tool"]) {
		const open = readme.indexOf("```ts\n", from) + 6;
		const block = readme.slice(open, readme.indexOf("\n```", open));
		from = open + block.length;
		const lines = block.split("\n").map((l) => l.trim()).filter(Boolean);
		assert.ok(lines.length > 6, `the README shows ${shows}`);
		let at = 0;
		for (const line of lines) {
			const found = source.indexOf(line, at);
			assert.ok(found >= 0, `compactd.ts has, in the README's order: ${line}`);
			at = found + line.length;
		}
	}
});


scenario({
	name: "pi with a small window (keepRecentTokens 2000)",
	contextWindow: 16000,
	settings: { enabled: true, reserveTokens: 4000, keepRecentTokens: 2000 },
	fileChars: 2400,
});

scenario({
	name: "pi with a larger window (keepRecentTokens 6000)",
	contextWindow: 32000,
	settings: { enabled: true, reserveTokens: 6000, keepRecentTokens: 6000 },
	fileChars: 3600,
});

// The real sessions of tests/fixtures, opened by pi (which migrates the version-1 one and
// gives its entries ids), compacted through compactd twice with pi's settings.
for (const [file, keepRecentTokens] of [
	["before-compaction.jsonl", 20000],
	["large-session.jsonl", 8000],
]) {
	describe(`a real session (${file}, keepRecentTokens ${keepRecentTokens})`, { concurrency: false }, () => {
		const rig = new Rig();
		before(() =>
			rig.start({
				contextWindow: 200000,
				settings: { enabled: false, reserveTokens: 16384, keepRecentTokens },
				session: join(HERE, "../../tests/fixtures/pi-sessions", file),
			}),
		);
		after(() => rig.stop());

		test("two manual compactions go through compactd, with pi's cut and file lists", async () => {
			const first = [];
			for (const round of [1, 2]) {
				const exchanges = rig.proxy.exchanges.length;
				await rig.pi.command({ type: "compact" });
				assert.equal(rig.proxy.exchanges.length, exchanges + 1);
				const entry = rig.checkCompactdRound(rig.proxy.exchanges.at(-1));
				if (round === 1) first.push(...entry.details.readFiles, ...entry.details.modifiedFiles);
				else for (const f of first) assert.ok([...entry.details.readFiles, ...entry.details.modifiedFiles].includes(f), `round 2 still lists ${f}`);
				// Something to compact next time: new turns after the kept part.
				for (let i = 0; i < 3; i++) await rig.turn();
			}
			assert.ok(first.length > 0, "the real session has file work");
		});
	});
}
