// The two servers the pi test puts around pi: a fake OpenAI-compatible model, and a proxy in
// front of compactd that records what the extension sent and what compactd answered, and can
// stand for a compactd that fails (500), hangs, or is down.
import http from "node:http";

/** pi's own summarization prompt opens with this (pi-coding-agent 0.73.1, compaction/utils). */
const PI_SUMMARIZER = "You are a context summarization assistant";

/** A request's whole body, as text. */
async function readBody(req) {
	let raw = "";
	for await (const chunk of req) raw += chunk;
	return raw;
}

/** Stops a server and drops the connections it still holds (a hung request among them). */
function closeServer(server) {
	server.closeAllConnections?.();
	server.close();
}

/** The text of a chat-completions message (a string, or an array of text parts). */
export function textOf(content) {
	if (typeof content === "string") return content;
	if (Array.isArray(content)) return content.map((p) => (typeof p?.text === "string" ? p.text : "")).join("");
	return "";
}

/** Everything a real tokenizer would count, about four characters a token. */
function promptTokens(messages) {
	let chars = 0;
	for (const m of messages) {
		chars += textOf(m.content).length;
		for (const c of m.tool_calls ?? []) chars += c.function.name.length + c.function.arguments.length;
	}
	return Math.ceil(chars / 4) + 50;
}

/**
 * An OpenAI-compatible model with two base URLs: `/agent/v1` for pi (its turns, and its own
 * summaries when it compacts by itself) and `/compactd/v1` for compactd's summarizer. It
 * answers as the real servers do: Server-Sent Events with `stream: true` (usage in a last
 * chunk when `stream_options.include_usage` asks for it), one JSON document otherwise.
 *
 * pi's turns follow the newest user message: every `read X`, `write X` and `edit X` in it
 * becomes a tool call; after the tool results the answer is a short text.
 */
export class FakeModel {
	constructor() {
		this.requests = []; // {route, body}
		this.lastUsage = null; // the usage of the last answer to pi's turns
		this.compactdSummaries = 0;
		this.server = http.createServer((req, res) => this.#handle(req, res));
	}

	async listen() {
		await new Promise((r) => this.server.listen(0, "127.0.0.1", r));
		return `http://127.0.0.1:${this.server.address().port}`;
	}

	close() {
		closeServer(this.server);
	}

	async #handle(req, res) {
		const body = JSON.parse(await readBody(req));
		const route = req.url.startsWith("/compactd/") ? "compactd" : "agent";
		this.requests.push({ route, body });
		const messages = body.messages;
		const system = textOf(messages.find((m) => m.role === "system" || m.role === "developer")?.content);
		let answer; // {content, toolCalls}
		if (route === "compactd") {
			this.compactdSummaries += 1;
			answer = { content: `## Goal\nCOMPACTD-SUMMARY-${this.compactdSummaries}: carry on with the file work.\n\n## Next Steps\n1. Read the next file.` };
		} else if (system.startsWith(PI_SUMMARIZER)) {
			answer = { content: "## Goal\nPI-OWN-SUMMARY: carry on with the file work." };
		} else {
			answer = this.#turn(messages);
		}
		const prompt = promptTokens(messages);
		const completion = Math.ceil(((answer.content ?? "").length + JSON.stringify(answer.toolCalls ?? []).length) / 4);
		const usage = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
		if (route === "agent" && !system.startsWith(PI_SUMMARIZER)) this.lastUsage = usage;
		const finish = answer.toolCalls ? "tool_calls" : "stop";
		const id = `chatcmpl-${this.requests.length}`;
		if (!body.stream) {
			const message = { role: "assistant", content: answer.content ?? null };
			if (answer.toolCalls) message.tool_calls = answer.toolCalls;
			res.writeHead(200, { "content-type": "application/json" });
			res.end(JSON.stringify({ id, object: "chat.completion", created: 1, model: body.model, choices: [{ index: 0, message, finish_reason: finish }], usage }));
			return;
		}
		res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
		const chunk = (choices, extra = {}) =>
			res.write(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created: 1, model: body.model, choices, ...extra })}\n\n`);
		chunk([{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }]);
		const text = answer.content ?? "";
		// In pieces, as a real server streams them.
		for (let i = 0; i < text.length; i += 16) chunk([{ index: 0, delta: { content: text.slice(i, i + 16) }, finish_reason: null }]);
		(answer.toolCalls ?? []).forEach((call, index) => {
			const args = call.function.arguments;
			const half = Math.ceil(args.length / 2);
			chunk([{ index: 0, delta: { tool_calls: [{ index, id: call.id, type: "function", function: { name: call.function.name, arguments: args.slice(0, half) } }] }, finish_reason: null }]);
			chunk([{ index: 0, delta: { tool_calls: [{ index, function: { arguments: args.slice(half) } }] }, finish_reason: null }]);
		});
		chunk([{ index: 0, delta: {}, finish_reason: finish }]);
		if (body.stream_options?.include_usage) chunk([], { usage });
		res.end("data: [DONE]\n\n");
	}

	#turn(messages) {
		const last = messages.at(-1);
		if (last.role === "tool") return { content: `Done with the files (${messages.length} messages so far).` };
		const asked = textOf(last.content);
		const recall = asked.match(/^recall (.+)$/);
		if (recall) {
			return { toolCalls: [{ id: `call_${messages.length}_recall`, type: "function", function: { name: "recall", arguments: JSON.stringify({ query: recall[1] }) } }] };
		}
		const calls = [...asked.matchAll(/\b(read|write|edit) (\S+\.txt)\b/g)].map(([, tool, path], i) => {
			const args =
				tool === "read"
					? { path }
					: tool === "write"
						? { path, content: `written by the fake model into ${path}\n` }
						: { path, edits: [{ oldText: `header of ${path}`, newText: `header of ${path} (edited)` }] };
			return { id: `call_${messages.length}_${i}`, type: "function", function: { name: tool, arguments: JSON.stringify(args) } };
		});
		return calls.length ? { toolCalls: calls } : { content: "Noted." };
	}
}

/**
 * Stands between the extension and compactd. `mode`: "forward" (records each exchange),
 * "error" (answers 500 as a failing server would), "hang" (never answers), "down" (the port is
 * closed: connections are refused).
 */
export class CompactdProxy {
	constructor(target) {
		this.target = target;
		this.mode = "forward";
		this.exchanges = []; // {request, status, response}
		this.attempts = 0;
		this.server = http.createServer((req, res) => this.#handle(req, res));
	}

	async listen(port = 0) {
		await new Promise((resolve, reject) => {
			this.server.once("error", reject);
			this.server.listen(port, "127.0.0.1", resolve);
		});
		this.port = this.server.address().port;
		return `http://127.0.0.1:${this.port}`;
	}

	/** Closes the port (mode "down") or opens it again on the same port. */
	async setMode(mode) {
		if (mode === "down" && this.mode !== "down") {
			this.server.closeAllConnections();
			await new Promise((r) => this.server.close(r));
			this.server = http.createServer((req, res) => this.#handle(req, res));
		} else if (mode !== "down" && this.mode === "down") {
			await this.listen(this.port);
		}
		this.mode = mode;
	}

	close() {
		closeServer(this.server);
	}

	async #handle(req, res) {
		const raw = await readBody(req);
		this.attempts += 1;
		if (this.mode === "hang") return; // the socket stays open and silent
		if (this.mode === "error") {
			res.writeHead(500, { "content-type": "application/problem+json" });
			res.end(JSON.stringify({ type: "about:blank", title: "Internal Server Error", status: 500 }));
			return;
		}
		const upstream = await fetch(`${this.target}${req.url}`, {
			method: req.method,
			headers: { "content-type": req.headers["content-type"] ?? "application/json" },
			body: raw,
		});
		const text = await upstream.text();
		this.exchanges.push({ request: JSON.parse(raw), status: upstream.status, response: JSON.parse(text) });
		res.writeHead(upstream.status, { "content-type": upstream.headers.get("content-type") ?? "application/json" });
		res.end(text);
	}
}
