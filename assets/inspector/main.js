// Wiring: load a session, ask the source for its outline and preparation, draw them,
// and re-run the preparation as the settings change.

import { fmt } from './format.js';
import { buildModel } from './model.js';
import { Timeline } from './timeline.js';
import { renderLegend, renderEntry, describeEntry, renderCutLine, renderGauge, renderFiles, renderRequests, renderResult, renderProviderResult, renderTree } from './panels.js';
import { LiveSource, EmbeddedSource, toJsonl, providerShape } from './source.js';

const $ = (id) => document.getElementById(id);

const state = {
  source: null, body: null, bytes: null, name: '', outline: null, prepare: null, provider: null,
  model: null, defaults: {}, seq: 0,
};

function status(text, isError) {
  const s = $('status');
  s.textContent = text;
  s.className = isError ? 'error' : '';
}

function settings() {
  const num = (id) => ($(id).value === '' ? null : Number($(id).value));
  return {
    keepRecentTokens: num('keepRecentTokens'),
    reserveTokens: num('reserveTokens'),
    contextWindow: num('contextWindow'),
    leafId: $('leaf').value || null,
  };
}

const timeline = new Timeline($('timeline'), {
  onFocus: (i) => {
    renderEntry($('entry'), state.model, i);
    $('announce').textContent = describeEntry(state.model, i);
  },
  onHover: (i) => renderEntry($('entry'), state.model, i),
});

function failed(e) {
  if (e && e.status === 401) {
    $('key-box').open = true;
    $('api-key').focus();
    status('This server needs an API key: enter it above.', true);
  } else {
    status(String(e && e.message ? e.message : e), true);
  }
}

async function load(text, name) {
  // A provider-style request is drawn as the session its route builds, and compacted by
  // that route.
  const from = state.source.live ? providerShape(text) : null;
  state.provider = from ? { from, request: text } : null;
  // /v1/messages summarizes everything: its cut is at the end.
  if (from === 'messages') $('keepRecentTokens').value = '0';
  try {
    state.body = from ? await state.source.session(text, from) : toJsonl(text);
  } catch (e) {
    failed(e);
    return;
  }
  state.bytes = new TextEncoder().encode(state.body);
  state.name = name;
  $('leaf').value = '';
  $('result').textContent = '';
  $('branch-result').textContent = '';
  await refresh(true);
}

// Re-reads the outline (when the leaf changed) and the preparation, then redraws.
async function refresh(withOutline) {
  const seq = ++state.seq;
  const s = settings();
  status('Preparing…');
  try {
    const t0 = performance.now();
    const outline = withOutline ? await state.source.outline(state.bytes, s) : state.outline;
    const prepare = await state.source.prepare(state.bytes, s);
    if (seq !== state.seq) return; // a newer run started
    const t1 = performance.now();
    state.outline = outline;
    state.prepare = prepare;
    show(withOutline);
    // Kept for whoever measures the page (the 20 MB browser test prints them).
    state.timings = { requestsMs: t1 - t0, renderMs: performance.now() - t1 };
    status(`${state.name}: ${fmt(outline.count)} entries, ${fmt(outline.path.length)} on the path.`);
  } catch (e) {
    if (seq === state.seq) failed(e);
  }
}

function show(newOutline) {
  const { outline, prepare } = state;
  state.model = buildModel(outline, prepare, state.bytes);
  $('view').hidden = false;
  $('session-name').textContent = state.name ? `— ${state.name}` : '';
  const kr = prepare.settings || {};
  if ($('keepRecentTokens').value === '') $('keepRecentTokens').value = kr.keepRecentTokens;
  if ($('reserveTokens').value === '') $('reserveTokens').value = kr.reserveTokens;
  if ($('contextWindow').value === '') $('contextWindow').value = state.defaults.contextWindow || 128000;
  renderCutLine($('cut-line'), prepare);
  renderGauge($('gauge'), $('gauge-text'), prepare, Number($('contextWindow').value),
    Number($('reserveTokens').value));
  renderFiles($('files-read'), $('files-modified'), prepare);
  renderRequests($('requests'), prepare);
  timeline.setModel(state.model, !newOutline);
  if (newOutline) {
    fillLeaves(outline);
    // A saved report has one path: its leaves are listed, not followed.
    const points = renderTree($('tree'), outline, state.source.live ? (leaf) => {
      $('leaf').value = outline.ids[leaf] || '';
      refresh(true);
    } : null);
    const list = $('branch-points');
    list.textContent = '';
    for (const p of points.slice(0, 1000)) {
      const o = document.createElement('option');
      o.value = outline.ids[p] || '';
      list.append(o);
    }
  }
  document.body.dataset.ready = String(++show.count);
}
show.count = 0;

function fillLeaves(outline) {
  const select = $('leaf');
  const current = select.value;
  select.textContent = '';
  const last = document.createElement('option');
  last.value = '';
  last.textContent = 'last entry';
  select.append(last);
  const from = $('branch-from');
  from.textContent = '';
  for (const leaf of outline.leaves.slice(0, 1000)) {
    const id = outline.ids[leaf];
    if (!id) continue;
    const o = document.createElement('option');
    o.value = id;
    o.textContent = `${id} (entry ${leaf + 1})`;
    select.append(o);
    from.append(o.cloneNode(true));
  }
  select.value = current;
}

async function compact() {
  status('Compacting…');
  renderResult($('result'), null);
  try {
    const p = state.provider;
    if (p) renderProviderResult($('result'), providerView(p.from, await state.source.compactProvider(p.request, p.from, settings())));
    else renderResult($('result'), await state.source.compact(state.bytes, { ...settings(), pinEntries: $('pin-entries').value.trim() }));
    status('Compacted.');
  } catch (e) {
    renderResult($('result'), { error: String(e.message || e) });
    failed(e);
  }
}

// What a provider route's answer shows: its summary, the items kept after it, its figures.
function providerView(from, r) {
  if (from === 'responses') {
    const [first, ...kept] = r.output;
    return {
      title: 'Summary (output item 1, a user message)', summary: first.content[0].text, kept,
      facts: [`tokensBefore ${fmt(r.tokens_before)}`, `tokensAfter ${fmt(r.tokens_after)}`,
        `model ${r.model}, ${fmt(r.usage.total_tokens)} tokens`],
    };
  }
  return {
    title: 'Summary (the compaction block)', summary: r.content[0].content, kept: [],
    facts: [`stop_reason ${r.stop_reason}`,
      `model ${r.model}, ${fmt(r.usage.input_tokens + r.usage.output_tokens)} tokens`],
  };
}

async function branch(ev) {
  ev.preventDefault();
  const out = $('branch-result');
  out.textContent = 'Summarizing…';
  try {
    const r = await state.source.branch(state.bytes, $('branch-from').value, $('branch-to').value, $('branch-run').checked);
    out.textContent = '';
    const pre = document.createElement('pre');
    pre.textContent = r.summary !== undefined ? r.summary : JSON.stringify(r, null, 2);
    out.append(pre);
  } catch (e) {
    out.textContent = String(e.message || e);
    out.className = 'error';
  }
}

// Recall: the matches of /v1/recall, each a button that moves the timeline to its entry.
async function recall(ev) {
  ev.preventDefault();
  const out = $('recall-result');
  out.textContent = '';
  status('Searching…');
  try {
    const r = await state.source.recall(state.bytes, $('recall-q').value, $('recall-scope').value, settings());
    for (const m of r.matches) {
      const li = document.createElement('li');
      const jump = document.createElement('button');
      jump.type = 'button';
      jump.className = 'recall-jump';
      jump.dataset.entry = m.entryId;
      jump.textContent = `${m.entryId} ${m.role}${m.toolName ? ` (${m.toolName})` : ''}`;
      jump.addEventListener('click', () => {
        const i = [...Array(state.model.n).keys()].find((k) => state.model.id(k) === m.entryId);
        if (i !== undefined) timeline.setFocus(i, true);
      });
      const excerpt = document.createElement('span');
      excerpt.textContent = ` ${m.excerpt}`;
      li.append(jump, excerpt);
      out.append(li);
    }
    status(`${r.matches.length} of ${fmt(r.searched)} entries match.`);
  } catch (e) {
    failed(e);
  }
}

// A handle for debugging and for the browser tests' measurements.
window.compactdInspector = { state, timeline };

async function init() {
  renderLegend($('legend'));
  const embedded = document.getElementById('compactd-data');
  if (embedded) {
    document.body.classList.add('static');
    const data = JSON.parse(embedded.textContent);
    state.source = new EmbeddedSource(data);
    state.defaults = data.settings || {};
    state.name = data.name;
    for (const k of ['keepRecentTokens', 'reserveTokens', 'contextWindow']) {
      $(k).value = data.settings[k];
      $(k).disabled = true;
    }
    $('leaf').disabled = true;
    state.outline = data.outline;
    state.prepare = data.prepare;
    show(true);
    if (data.compaction) renderResult($('result'), data.compaction);
    else renderResult($('result'), { error: data.compactionNote || 'No compaction in this report.' });
    status(`${data.name}: ${fmt(data.outline.count)} entries (saved report).`);
    return;
  }
  state.source = new LiveSource();
  $('api-key').value = state.source.key;
  $('key-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    state.source.setKey($('api-key').value.trim());
    $('key-box').open = false;
    await loadDefaults();
    if (state.body) refresh(true);
    else status('Key saved for this tab.');
  });
  $('file').addEventListener('change', async () => {
    const f = $('file').files[0];
    if (f) load(await f.text(), f.name);
  });
  const drop = $('drop');
  drop.addEventListener('dragover', (e) => { e.preventDefault(); drop.classList.add('over'); });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', async (e) => {
    e.preventDefault();
    drop.classList.remove('over');
    const f = e.dataTransfer.files[0];
    if (f) load(await f.text(), f.name);
  });
  $('paste-go').addEventListener('click', () => load($('paste-text').value, 'pasted session'));
  let timer = null;
  for (const id of ['keepRecentTokens', 'reserveTokens', 'contextWindow']) {
    $(id).addEventListener('input', () => {
      clearTimeout(timer);
      timer = setTimeout(() => state.body && refresh(false), 250);
    });
  }
  $('leaf').addEventListener('change', () => state.body && refresh(true));
  $('compact').addEventListener('click', compact);
  $('branch-form').addEventListener('submit', branch);
  $('recall-form').addEventListener('submit', recall);
  await loadDefaults();
  document.body.dataset.ready = '0';
}

async function loadDefaults() {
  try {
    state.defaults = await state.source.defaults();
  } catch (e) {
    failed(e);
  }
}

init().catch(failed);
