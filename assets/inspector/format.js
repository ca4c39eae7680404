// Formatting and the kind palette, shared by the drawing and the panels.

export const KIND_COLORS = {
  user: '#2e7d32', assistant: '#5c6bc0', toolResult: '#9e9e9e', bash: '#6d4c41',
  custom: '#8e24aa', compaction: '#ef6c00', branchSummary: '#00897b', other: '#cfd8dc',
};

export const KIND_LABELS = {
  user: 'user', assistant: 'assistant', toolResult: 'tool result', bash: 'bash',
  custom: 'custom', compaction: 'earlier compaction', branchSummary: 'branch summary',
  other: 'other',
};

const numberFormat = new Intl.NumberFormat('en');

export function fmt(n) {
  return n === null || n === undefined ? '–' : numberFormat.format(Math.round(n));
}

// An element with text (never HTML: a session's text must not become markup).
export function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}
