// Where the data comes from: the server's API (the page on GET /), or the data a
// report embeds (compactd inspect). Both answer the same calls.

const KEY = 'compactd.apiKey';

export class ApiError extends Error {
  constructor(status, problem) {
    // A problem document, or OpenAI's error shape (the provider routes).
    const detail = problem && (problem.detail || problem.title || (problem.error && problem.error.message));
    super(detail ? `${status}: ${detail}` : `HTTP ${status}`);
    this.status = status;
    this.problem = problem;
  }
}

// A session as the body the API reads: JSONL, with options in the query string.
// A JSON session (an object with `entries`, or an array) becomes one line per entry.
export function toJsonl(text) {
  const trimmed = text.trimStart();
  if (trimmed.startsWith('[') || (trimmed.startsWith('{') && looksLikeEnvelope(trimmed))) {
    let parsed;
    try { parsed = JSON.parse(text); } catch { return text; }
    const entries = Array.isArray(parsed) ? parsed : parsed && parsed.entries;
    if (Array.isArray(entries)) return entries.map((e) => JSON.stringify(e)).join('\n') + '\n';
  }
  return text;
}

// A provider-style request instead of a session: 'responses' for an OpenAI Responses
// request (an object with `input`, no `entries`), 'messages' for an Anthropic compaction
// request (`messages` and `compaction`), else null.
export function providerShape(text) {
  if (!text.trimStart().startsWith('{')) return null;
  let parsed;
  try { parsed = JSON.parse(text); } catch { return null; }
  if (!parsed || parsed.entries !== undefined) return null;
  if (parsed.input !== undefined) return 'responses';
  return Array.isArray(parsed.messages) && parsed.compaction ? 'messages' : null;
}

// The route that compacts each provider shape.
const PROVIDER_ROUTES = { responses: '/v1/responses/compact', messages: '/v1/messages' };

// An object session starts with `{"entries"` or, pretty-printed, has no entry on its first line.
function looksLikeEnvelope(text) {
  const firstLine = text.slice(0, text.indexOf('\n') < 0 ? text.length : text.indexOf('\n'));
  return /^\{\s*"entries"/.test(text) || !/"type"\s*:/.test(firstLine);
}

function query(settings, extra) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries({ ...settings, ...extra })) {
    if (v !== null && v !== undefined && v !== '') q.set(k, String(v));
  }
  return q.toString();
}

export class LiveSource {
  constructor() {
    this.live = true;
    this.key = sessionStorage.getItem(KEY) || '';
  }

  setKey(key) {
    this.key = key;
    if (key) sessionStorage.setItem(KEY, key); else sessionStorage.removeItem(KEY);
  }

  async call(method, path, body, bodyType = 'application/x-ndjson') {
    const headers = {};
    if (this.key) headers.authorization = `Bearer ${this.key}`;
    if (body) headers['content-type'] = bodyType;
    const res = await fetch(path, { method, headers, body });
    const type = res.headers.get('content-type') || '';
    const isJson = /^application\/(problem\+)?json/.test(type);
    const data = isJson ? await res.json() : await res.text();
    if (!res.ok) throw new ApiError(res.status, typeof data === 'object' ? data : null);
    return data;
  }

  async defaults() {
    try {
      const c = await this.call('GET', '/v1/config');
      return { contextWindow: c.contextWindow, keepRecentTokens: c.keepRecentTokens, reserveTokens: c.reserveTokens };
    } catch (e) {
      if (e.status === 401) throw e;
      return {};
    }
  }

  outline(body, settings) {
    return this.call('POST', `/v1/inspect/outline?${query({ leafId: settings.leafId })}`, body);
  }

  prepare(body, settings) {
    return this.call('POST', `/v1/prepare?${query(settings, { messages: false })}`, body);
  }

  compact(body, settings) {
    return this.call('POST', `/v1/compact?${query(settings, { messages: null })}`, body);
  }

  // What POST /v1/recall finds for `q` on the page's path.
  recall(body, q, scope, settings) {
    const { keepRecentTokens, reserveTokens, leafId } = settings;
    return this.call('POST', `/v1/recall?${query({ q, scope, keepRecentTokens, reserveTokens, leafId })}`, body);
  }

  branch(body, from, to, run) {
    return this.call('POST', `/v1/branch-summary?${query({ oldLeafId: from, targetId: to, dryRun: !run })}`, body);
  }

  // The pi session the provider route builds from `request` (JSONL).
  session(request, from) {
    return this.call('POST', `/v1/inspect/session?${query({ from })}`, request, 'application/json');
  }

  // The provider route's own answer for `request`, with the page's cut settings.
  compactProvider(request, from, settings) {
    const { keepRecentTokens, reserveTokens } = settings;
    return this.call('POST', `${PROVIDER_ROUTES[from]}?${query({ keepRecentTokens, reserveTokens })}`,
      request, 'application/json');
  }
}

export class EmbeddedSource {
  constructor(data) {
    this.live = false;
    this.data = data;
  }

  async defaults() { return this.data.settings; }
  async outline() { return this.data.outline; }
  async prepare() { return this.data.prepare; }
  async compact() {
    if (this.data.compaction) return this.data.compaction;
    throw new Error(this.data.compactionNote || 'No compaction in this report.');
  }

  async branch() { throw new Error('Branch summaries need a running compactd.'); }
}
