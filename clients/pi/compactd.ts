/**
 * compactd for pi: every compaction pi makes (automatic, or `/compact [instructions]`) is made
 * by a compactd server instead: the cut, the summary, the file lists and the pinned ledger.
 *
 *   pi -e ./compactd.ts                        # for one run
 *   cp compactd.ts ~/.pi/agent/extensions/     # for every run
 *
 * Environment:
 *   COMPACTD_URL         the server (default http://127.0.0.1:8080)
 *   COMPACTD_API_KEY     sent as a bearer token when the server requires a key
 *   COMPACTD_TIMEOUT_MS  how long a compaction may take before pi stops waiting (default 120000)
 *
 * compactd cuts with pi's own compaction settings (`keepRecentTokens`, `reserveTokens`), and
 * its configured summarizer writes the summary (its model candidates, or its extractive
 * summarizer when it has none): pi's model and key are not sent. When compactd cannot be
 * reached, answers an error, or takes longer than the timeout, the handler returns nothing
 * and pi compacts by itself, as it would without the extension, keeping the file lists of
 * compactd's earlier compactions.
 *
 * It also gives the agent a `recall` tool: a search (POST /v1/recall) of the part of the
 * session that compactions took out of the context, answered with the matching passages and
 * their entry ids, so what a summary left out can be looked up instead of redone.
 */
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { Type } from "typebox";

const BASE = (process.env.COMPACTD_URL || "http://127.0.0.1:8080").replace(/\/+$/, "");
const API_KEY = process.env.COMPACTD_API_KEY;
const TIMEOUT_MS = Number(process.env.COMPACTD_TIMEOUT_MS) || 120_000;

function jsonHeaders(): Record<string, string> {
	const headers: Record<string, string> = { "content-type": "application/json" };
	if (API_KEY) headers.authorization = `Bearer ${API_KEY}`;
	return headers;
}

export default function compactd(pi: ExtensionAPI) {
	pi.registerTool({
		name: "recall",
		label: "Recall",
		description:
			"Search the older part of this session that was compacted out of your context (messages, tool calls and outputs, errors) for words or exact identifiers such as file paths, function names or error codes. Returns the matching passages, best first.",
		parameters: Type.Object({
			query: Type.String({ description: "Words or identifiers to look for" }),
			limit: Type.Optional(Type.Number({ description: "Matches to return (1-50, default 5)" })),
		}),
		async execute(_toolCallId, params, signal, _onUpdate, ctx) {
			const entries = ctx.sessionManager.getBranch();
			const timeout = AbortSignal.timeout(TIMEOUT_MS);
			const res = await fetch(`${BASE}/v1/recall`, {
				method: "POST",
				headers: jsonHeaders(),
				body: JSON.stringify({ entries, q: params.query, limit: params.limit ?? 5 }),
				signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
			});
			if (!res.ok) throw new Error(`compactd recall answered ${res.status}: ${await res.text()}`);
			const { matches, searched } = await res.json();
			const text = matches.length
				? matches.map((m: any) => `[${m.entryId}] ${m.role}${m.toolName ? ` (${m.toolName})` : ""}: ${m.excerpt}`).join("\n\n")
				: `No match among the ${searched} compacted entries.`;
			return { content: [{ type: "text", text }], details: { matches } };
		},
	});

	pi.on("session_before_compact", async (event) => {
		const { preparation, branchEntries, customInstructions, signal } = event;
		const headers = jsonHeaders();
		try {
			const res = await fetch(`${BASE}/v1/compact`, {
				method: "POST",
				headers,
				body: JSON.stringify({ entries: branchEntries, settings: preparation.settings, customInstructions }),
				signal: AbortSignal.any([signal, AbortSignal.timeout(TIMEOUT_MS)]),
			});
			if (res.ok) {
				const { summary, firstKeptEntryId, tokensBefore, details } = await res.json();
				return { compaction: { summary, firstKeptEntryId, tokensBefore, details } };
			}
		} catch {
			// Refused, reset, timed out or aborted: pi compacts by itself, with no error shown.
		}
		keepFileLists(preparation, branchEntries);
		return; // pi compacts by itself
	});
}

/**
 * pi takes no file lists from an extension's entry (`fromHook: true`), compactd's included, so
 * before pi compacts by itself the lists of compactd's last compaction go into pi's own
 * (`preparation.fileOps`, which pi's compaction reads after this handler returns).
 */
function keepFileLists(preparation: any, branchEntries: any[]) {
	const previous = branchEntries.findLast((e) => e.type === "compaction");
	const details = previous?.fromHook ? previous.details : undefined;
	const ops = preparation.fileOps;
	const ours = details?.producer === "compactd" || (Number.isInteger(details?.pinned?.version) && Array.isArray(details?.pinned?.items));
	if (!ours || !(ops?.read instanceof Set) || !(ops?.edited instanceof Set)) return;
	for (const f of Array.isArray(details.readFiles) ? details.readFiles : []) if (typeof f === "string") ops.read.add(f);
	for (const f of Array.isArray(details.modifiedFiles) ? details.modifiedFiles : []) if (typeof f === "string") ops.edited.add(f);
}
