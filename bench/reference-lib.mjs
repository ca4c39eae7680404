// The reference (@mariozechner/pi-coding-agent@0.73.1, installed in tests/conformance/node_modules)
// as both benchmarks load it, and the steps pi takes before prepareCompaction, from the
// session text in memory. Shared by bench/reference.mjs and bench/http.mjs.

import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const PKG = path.join(REPO, "tests/conformance/node_modules/@mariozechner/pi-coding-agent");
const CORE = path.join(PKG, "dist/core");
export const REF_VERSION = "0.73.1";
export const SETTINGS = { enabled: true, reserveTokens: 16384, keepRecentTokens: 20000 };

/** The reference's modules, imported by file path (prepareCompaction is not exported from the root). */
export async function loadReference() {
	if (!fs.existsSync(PKG)) throw new Error(`reference not installed at ${PKG}; run: npm ci --prefix tests/conformance`);
	const pkgVersion = JSON.parse(fs.readFileSync(path.join(PKG, "package.json"), "utf8")).version;
	if (pkgVersion !== REF_VERSION) throw new Error(`expected @mariozechner/pi-coding-agent ${REF_VERSION}, found ${pkgVersion}`);
	const imp = (p) => import(pathToFileURL(path.join(CORE, p)).href);
	return {
		...(await imp("compaction/compaction.js")),
		...(await imp("compaction/utils.js")),
		...(await imp("messages.js")),
		...(await imp("session-manager.js")),
	};
}

/** loadEntriesFromFile without the readFileSync: malformed lines skipped, the header checked. */
export function loadEntries(content) {
	const entries = [];
	for (const line of content.trim().split("\n")) {
		if (!line.trim()) continue;
		try {
			entries.push(JSON.parse(line));
		} catch {
			// malformed lines are skipped, as the reference does
		}
	}
	if (entries.length === 0) return entries;
	const header = entries[0];
	if (header.type !== "session" || typeof header.id !== "string") return [];
	return entries;
}

/** SessionManager._buildIndex + getBranch(leafId = last entry), with its Array.prototype.unshift. */
export function branchFromLast(entries) {
	const byId = new Map();
	let leaf;
	for (const e of entries) {
		if (e.type === "session") continue;
		byId.set(e.id, e);
		leaf = e;
	}
	const out = [];
	let current = leaf;
	while (current) {
		out.unshift(current);
		current = current.parentId ? byId.get(current.parentId) : undefined;
	}
	return out;
}
