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
const { prepareCompaction } = await import(pathToFileURL(join(PI, "dist/core/compaction/compaction.js")).href);

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
	constructor({ cwd, agentDir, sessionDir, compactdUrl }) {
		this.events = [];
		this.waiters = [];
		this.stderr = "";
		this.child = spawn(
			process.execPath,
			[join(PI, "dist/cli.js"), "--mode", "rpc", "-e", join(HERE, "compactd.ts"), "--provider", "fake", "--model", "fake-model", "--session-dir", sessionDir],
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
		return new Promise((resolve, reject) => {
			const timer = setTimeout(() => reject(new Error(`pi: no ${what} within ${ms} ms; stderr: ${this.stderr.slice(-2000)}`)), ms);
			this.waiters.push({ match, from, resolve: (e) => (clearTimeout(timer), resolve(e)) });
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

/**
 * What pi alone would list after this many rounds: its lists are cumulative, so they are the
 * read/write/edit calls of every message before the new first kept entry (pi's
 * `computeFileLists`: modified = written ∪ edited, read = read − modified, both sorted).
 */
function expectedLists(path, firstKeptEntryId) {
	const read = new Set();
	const modified = new Set();
	for (const e of path) {
		if (e.id === firstKeptEntryId) break;
		if (e.type !== "message" || e.message.role !== "assistant" || !Array.isArray(e.message.content)) continue;
		for (const b of e.message.content) {
			if (b.type !== "toolCall" || typeof b.arguments?.path !== "string") continue;
			if (b.name === "read") read.add(b.arguments.path);
			else if (b.name === "write" || b.name === "edit") modified.add(b.arguments.path);
		}
	}
	return {
		readFiles: [...read].filter((f) => !modified.has(f)).sort(),
		modifiedFiles: [...modified].sort(),
	};
}

/** One pi, one compactd, one fake model, one workspace, with these pi compaction settings. */
function scenario({ name, contextWindow, settings, fileChars }) {
	describe(name, { concurrency: false }, () => {
		let work, fake, compactd, proxy, pi, sessionFile;
		const rounds = []; // compactd's compactions: {entry, exchange}

		before(async () => {
			work = mkdtempSync(join(tmpdir(), "compactd-pi-"));
			const cwd = join(work, "project");
			const agentDir = join(work, "agent");
			mkdirSync(cwd);
			mkdirSync(agentDir);
			for (let i = 1; i <= 400; i++) {
				const path = `f${String(i).padStart(3, "0")}.txt`;
				const line = `line of ${path}: the quick brown fox jumps over the lazy dog.\n`;
				writeFileSync(join(cwd, path), `header of ${path}\n${line.repeat(Math.ceil(fileChars / line.length))}`);
			}
			fake = new FakeModel();
			const modelBase = await fake.listen();
			compactd = await startCompactd(work, modelBase);
			proxy = new CompactdProxy(compactd.base);
			const proxyUrl = await proxy.listen();
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
			pi = new Pi({ cwd, agentDir, sessionDir: join(work, "sessions"), compactdUrl: proxyUrl });
			sessionFile = (await pi.command({ type: "get_state" })).sessionFile;
		});

		after(() => {
			pi?.stop();
			proxy?.close();
			compactd?.child.kill();
			fake?.close();
			if (work) rmSync(work, { recursive: true, force: true });
		});

		let fileNo = 0;
		/** One turn of file work: reads two files, and edits or writes one every other turn. */
		const turn = async () => {
			const next = () => `f${String(++fileNo).padStart(3, "0")}.txt`;
			const a = next();
			const b = next();
			const extra = fileNo % 4 === 0 ? ` and edit ${a}` : ` and write new-${fileNo}.txt`;
			const threshold = contextWindow - settings.reserveTokens;
			const events = pi.events.length;
			await pi.prompt(`Please read ${a} and read ${b}${extra}.`, { compacts: false });
			// pi compacts after a turn whose last answer reported more than the threshold.
			const compacts = fake.lastUsage.total_tokens > threshold;
			if (compacts) await pi.waitFor((e) => e.type === "compaction_end", events, "compaction_end");
			return compacts;
		};

		/** The newest compaction entry and the path before it. */
		const latestCompaction = () => {
			const { entries, byId } = readSession(sessionFile);
			const entry = entries.filter((e) => e.type === "compaction").at(-1);
			return { entry, before: pathTo(byId, entry.parentId), byId };
		};

		/** What every compaction compactd made must hold. */
		const checkCompactdRound = (exchange) => {
			const { entry, before, byId } = latestCompaction();
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
			assert.deepEqual(exchange.request.settings, settings);
			const pis = prepareCompaction(before, settings);
			assert.equal(entry.firstKeptEntryId, pis.firstKeptEntryId, "the cut pi makes with its settings");
			assert.equal(entry.tokensBefore, pis.tokensBefore);
			// The first kept entry is on the path, and the lists are pi's cumulative ones.
			assert.ok(pathTo(byId, entry.id).some((e) => e.id === entry.firstKeptEntryId));
			const lists = expectedLists(before, entry.firstKeptEntryId);
			assert.deepEqual(entry.details.readFiles, lists.readFiles);
			assert.deepEqual(entry.details.modifiedFiles, lists.modifiedFiles);
			return entry;
		};

		/** The agent's next request carries this summary, and gets an answer. */
		const goesOn = async (summary) => {
			const before = fake.requests.length;
			await pi.prompt("What is next?", { compacts: false });
			const sent = fake.requests.slice(before).find((r) => r.route === "agent");
			assert.ok(sent, "pi asked its model again");
			assert.ok(sent.body.messages.some((m) => textOf(m.content).includes(summary)), "the summary is in pi's context");
		};

		test("automatic compactions go through compactd, and their file lists carry over", async () => {
			for (let turns = 0; rounds.length < 3; turns++) {
				assert.ok(turns < 120, "three automatic compactions within 120 turns");
				const exchanges = proxy.exchanges.length;
				if (!(await turn())) continue;
				assert.equal(proxy.exchanges.length, exchanges + 1, "the compaction went to compactd");
				const exchange = proxy.exchanges.at(-1);
				rounds.push({ entry: checkCompactdRound(exchange), exchange });
				await goesOn(exchange.response.summary);
			}
			// Carried over: every round lists what the one before listed, and more.
			for (let i = 1; i < rounds.length; i++) {
				const [prev, cur] = [rounds[i - 1].entry.details, rounds[i].entry.details];
				const all = (d) => new Set([...d.readFiles, ...d.modifiedFiles]);
				for (const f of all(prev)) assert.ok(all(cur).has(f), `round ${i + 1} still lists ${f}`);
				assert.ok(all(cur).size > all(prev).size, `round ${i + 1} lists more files`);
			}
		});

		test("a manual compaction with instructions goes through compactd", async () => {
			await turn();
			await turn();
			const exchanges = proxy.exchanges.length;
			const summaries = fake.requests.filter((r) => r.route === "compactd").length;
			const instructions = "Keep every file name that was edited.";
			const result = await pi.command({ type: "compact", customInstructions: instructions });
			assert.equal(proxy.exchanges.length, exchanges + 1);
			const exchange = proxy.exchanges.at(-1);
			assert.equal(exchange.request.customInstructions, instructions);
			const entry = checkCompactdRound(exchange);
			assert.equal(result.summary, entry.summary);
			const asked = fake.requests.filter((r) => r.route === "compactd").slice(summaries);
			assert.ok(asked.some((r) => r.body.messages.some((m) => textOf(m.content).includes(instructions))), "compactd's model saw the instructions");
			await goesOn(entry.summary);
		});

		/** pi compacted by itself: its own entry and summary, no extension error, and it goes on. */
		const checkFallback = async (from) => {
			const { entry, before } = latestCompaction();
			assert.notEqual(entry.fromHook, true, "pi's own compaction");
			assert.match(entry.summary, /PI-OWN-SUMMARY/);
			// With the lists of compactd's rounds before it (the extension hands them over).
			assert.deepEqual(entry.details, expectedLists(before, entry.firstKeptEntryId));
			const errors = pi.events.slice(from).filter((e) => e.type === "extension_error" || (e.type === "compaction_end" && e.errorMessage));
			assert.deepEqual(errors, []);
			await goesOn("PI-OWN-SUMMARY");
		};

		test("compactd answering 500: pi compacts by itself, quietly", async () => {
			await proxy.setMode("error");
			const from = pi.events.length;
			const attempts = proxy.attempts;
			let compacted = false;
			for (let turns = 0; !compacted; turns++) {
				assert.ok(turns < 40, "an automatic compaction within 40 turns");
				compacted = await turn();
			}
			assert.equal(proxy.attempts, attempts + 1, "the extension asked compactd first");
			await checkFallback(from);
		});

		test("compactd hanging past the timeout: pi compacts by itself, quietly", async () => {
			await proxy.setMode("hang");
			await turn();
			const from = pi.events.length;
			const attempts = proxy.attempts;
			const started = Date.now();
			await pi.command({ type: "compact" });
			assert.equal(proxy.attempts, attempts + 1);
			assert.ok(Date.now() - started >= TIMEOUT_MS - 100, "pi waited for the extension's timeout");
			await checkFallback(from);
		});

		test("compactd down: pi compacts by itself, quietly", async () => {
			await proxy.setMode("down");
			await turn();
			const from = pi.events.length;
			await pi.command({ type: "compact" });
			await checkFallback(from);
			// And when compactd is back, the next compaction is compactd's again, with the lists
			// of pi's own rounds carried on.
			await proxy.setMode("forward");
			await turn();
			const exchanges = proxy.exchanges.length;
			await pi.command({ type: "compact" });
			assert.equal(proxy.exchanges.length, exchanges + 1);
			checkCompactdRound(proxy.exchanges.at(-1));
			assert.deepEqual(pi.events.filter((e) => e.type === "extension_error"), []);
		});
	});
}

test("the README's extension snippet is the extension CI loads", () => {
	const readme = readFileSync(join(HERE, "../../README.md"), "utf8");
	const start = readme.indexOf("**A pi extension.**");
	const block = readme.slice(readme.indexOf("```ts\n", start) + 6, readme.indexOf("\n```", readme.indexOf("```ts\n", start) + 6));
	const source = readFileSync(join(HERE, "compactd.ts"), "utf8");
	const lines = block.split("\n").map((l) => l.trim()).filter(Boolean);
	assert.ok(lines.length > 10, "the README shows the handler");
	let at = 0;
	for (const line of lines) {
		const found = source.indexOf(line, at);
		assert.ok(found >= 0, `compactd.ts has, in the README's order: ${line}`);
		at = found + line.length;
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
