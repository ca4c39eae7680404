// The panels around the timeline: the cut in words, the context gauge, files, the
// summarizer requests, a compaction's result and the tree of branches. Text only ever
// goes in through textContent.

import { KIND_LABELS, KIND_COLORS, fmt, el, clear } from './format.js';

export function renderLegend(node) {
  clear(node);
  for (const [kind, label] of Object.entries(KIND_LABELS)) {
    const s = el('span', label);
    s.style.setProperty('--swatch', KIND_COLORS[kind]);
    node.append(s);
  }
}

// One line per entry: what the detail box shows and the live region announces.
export function describeEntry(m, i) {
  const parts = [
    `Entry ${i + 1} of ${fmt(m.n)}`,
    KIND_LABELS[m.kindName(i)] || m.kindName(i),
    `id ${m.id(i) === null ? '(none)' : m.id(i)}`,
    `${fmt(m.tokens[i])} tokens`,
    m.region(i),
  ];
  if (i === m.cut) parts.push('first kept entry (cut)');
  if (i === m.turnStart) parts.push('start of the split turn');
  if (i === m.previous) parts.push('previous compaction');
  return parts.join(', ');
}

export function renderEntry(node, m, i) {
  clear(node);
  if (i === null || i === undefined) return;
  node.dataset.index = String(i);
  node.dataset.id = m.id(i) === null ? '' : m.id(i);
  node.append(el('div', describeEntry(m, i)));
  node.append(el('div', m.preview(i), 'text'));
}

export function renderCutLine(node, prepare) {
  clear(node);
  if (!prepare) return;
  if (!prepare.compactable) {
    node.textContent = `Not compactable: ${prepare.reason} (${prepare.reasonCode}); tokensBefore ${fmt(prepare.tokensBefore)}.`;
    return;
  }
  let text = `Cut before entry ${prepare.firstKeptEntryId} (path index ${prepare.firstKeptEntryIndex}, ` +
    `input index ${prepare.firstKeptEntryInputIndex}); tokensBefore ${fmt(prepare.tokensBefore)}; `;
  text += prepare.isSplitTurn
    ? `split turn, starting at ${prepare.turnStartEntryId} (path index ${prepare.turnStartIndex}).`
    : 'not a split turn.';
  text += ` ${fmt(prepare.summarizedEntryIds.length)} entries to summarize.`;
  node.textContent = text;
}

export function renderGauge(meter, text, prepare, contextWindow, reserve) {
  const tokens = prepare ? prepare.tokensBefore : 0;
  const limit = Math.max(0, contextWindow - reserve);
  meter.max = contextWindow;
  meter.low = limit * 0.8;
  meter.high = limit;
  meter.optimum = 0;
  meter.value = Math.min(tokens, contextWindow);
  const due = tokens > limit;
  text.textContent = `tokensBefore ${fmt(tokens)} of a ${fmt(contextWindow)}-token window ` +
    `with ${fmt(reserve)} reserved (compaction is due above ${fmt(limit)}): ` +
    (due ? 'compaction is due.' : 'not due yet.');
  text.dataset.due = String(due);
}

export function renderFiles(read, modified, prepare) {
  for (const [node, list] of [[read, prepare && prepare.details ? prepare.details.readFiles : []],
    [modified, prepare && prepare.details ? prepare.details.modifiedFiles : []]]) {
    clear(node);
    if (!list || !list.length) node.append(el('li', '(none)'));
    for (const f of list || []) node.append(el('li', f));
  }
}

const SHOWN_CHARS = 20000;

// A long text in a <pre>, filled only when its <details> opens.
function lazyText(summary, text) {
  const d = el('details');
  d.append(el('summary', summary));
  d.addEventListener('toggle', () => {
    if (!d.open || d.querySelector('pre')) return;
    const more = text.length - SHOWN_CHARS;
    d.append(el('pre', more > 0 ? `${text.slice(0, SHOWN_CHARS)}\n… ${fmt(more)} more characters` : text));
  });
  return d;
}

export function renderRequests(node, prepare) {
  clear(node);
  if (!prepare || !prepare.requests) {
    node.append(el('p', 'None: nothing to compact.', 'help'));
    return;
  }
  for (const r of prepare.requests) {
    const box = lazyText(`${r.kind}: ${fmt(r.prompt.length)} characters, maxTokens ${fmt(r.maxTokens)}`,
      `${r.systemPrompt}\n\n---\n\n${r.prompt}`);
    node.append(box);
  }
}

// The active pinned items, each with whether the closing "Pinned" section re-inserted it.
function pinnedItems(result) {
  const ledger = result.details && result.details.pinned;
  const items = ledger && Array.isArray(ledger.items) ? ledger.items.filter((it) => it.status === 'active') : [];
  const reinserted = new Set(result.retention.reinsertedIds || []);
  return items.map((it) => ({ item: it, reinserted: reinserted.has(it.id) }));
}

export function renderResult(node, result) {
  clear(node);
  if (!result) return;
  if (result.error) {
    node.append(el('p', result.error, 'error'));
    return;
  }
  const facts = el('div', null, 'facts');
  facts.append(el('span', `tokensBefore ${fmt(result.tokensBefore)}`));
  facts.append(el('span', `tokensAfter ${fmt(result.tokensAfter)}`));
  const progress = el('span', `madeProgress ${result.madeProgress}` +
    (result.progressReason ? ` (${result.progressReason})` : ''));
  progress.id = 'made-progress';
  facts.append(progress);
  facts.append(el('span', `summarizer ${result.summarizer}, model ${result.model}, ${result.calls} call(s)`));
  node.append(facts);
  const summary = el('pre', result.summary);
  summary.id = 'summary';
  summary.setAttribute('aria-label', 'Summary');
  node.append(el('h4', 'Summary'), summary);
  if (result.retention) {
    const r = result.retention;
    node.append(el('h4', 'Pinned items'));
    node.append(el('p', `${r.pinned} pinned, ${r.present} carried by the summary, ${r.reinserted} re-inserted` +
      (r.leftOut.length ? `, left out: ${r.leftOut.join(', ')}` : '') + '.'));
    const ul = el('ul');
    ul.id = 'pinned';
    for (const { item, reinserted } of pinnedItems(result)) {
      const li = el('li', `${item.kind}: ${String(item.text).slice(0, 200)}`, reinserted ? 'reinserted' : '');
      ul.append(li);
    }
    node.append(ul);
  } else {
    node.append(el('p', 'No pinned items (checked compaction is off).', 'help'));
  }
}

// A provider route's answer, as main.js's providerView reads it: the summary as that
// route sends it, the items kept after it, and its figures.
export function renderProviderResult(node, view) {
  clear(node);
  const facts = el('div', null, 'facts');
  for (const f of view.facts) facts.append(el('span', f));
  node.append(facts);
  const summary = el('pre', view.summary);
  summary.id = 'summary';
  summary.setAttribute('aria-label', 'Summary');
  node.append(el('h4', view.title), summary);
  node.append(el('h4', `Kept items: ${view.kept.length}`));
  const ul = el('ul');
  ul.id = 'kept-items';
  for (const item of view.kept.slice(0, 200)) {
    ul.append(el('li', [item.type || 'message', item.role, item.name, item.call_id].filter(Boolean).join(' ')));
  }
  node.append(ul);
}

const MAX_SEGMENTS = 400;

// The tree of branches, drawn as segments: a run of single-child entries is one line,
// so only branch points and leaves make DOM nodes.
export function renderTree(node, outline, onPickLeaf) {
  const shown = outline.path.length ? outline.path[outline.path.length - 1] : -1;
  clear(node);
  const n = outline.count;
  const children = new Map();
  const roots = [];
  for (let i = 0; i < n; i++) {
    const p = outline.parents[i];
    if (p < 0) roots.push(i);
    else if (children.has(p)) children.get(p).push(i);
    else children.set(p, [i]);
  }
  const branchPoints = [];
  for (const [p, kids] of children) if (kids.length > 1) branchPoints.push(p);
  const summary = el('p', `${fmt(roots.length)} root(s), ${fmt(branchPoints.length)} branch point(s), ` +
    `${fmt(outline.leaves.length)} leaf/leaves.`);
  node.append(summary);
  const top = el('ul', null, 'tree');
  top.setAttribute('aria-label', 'Branches');
  node.append(top);
  let segments = 0;
  const stack = roots.slice().reverse().map((r) => [r, top]);
  while (stack.length && segments < MAX_SEGMENTS) {
    const [start, parentList] = stack.pop();
    let end = start, length = 1;
    while (children.has(end) && children.get(end).length === 1) { end = children.get(end)[0]; length++; }
    const kids = children.get(end) || [];
    const li = el('li');
    const label = `${outline.ids[start] || '(no id)'} … ${outline.ids[end] || '(no id)'}: ${fmt(length)} entries`;
    if (!kids.length) {
      const b = el('button', `${label} (leaf${end === shown ? ', shown' : ''})`);
      b.type = 'button';
      if (end === shown) b.setAttribute('aria-current', 'true');
      if (onPickLeaf) b.addEventListener('click', () => onPickLeaf(end));
      else b.disabled = true;
      li.append(b);
    } else {
      li.append(el('span', `${label}, then ${kids.length} branches`));
      const ul = el('ul');
      li.append(ul);
      for (let k = kids.length - 1; k >= 0; k--) stack.push([kids[k], ul]);
    }
    parentList.append(li);
    segments++;
  }
  if (stack.length) node.append(el('p', `… and more branches (first ${MAX_SEGMENTS} shown).`, 'help'));
  return branchPoints;
}
