// The path as typed arrays, and the regions /v1/prepare names on it.
//
// Positions along the timeline are in "layout units": an entry's token estimate plus a
// floor of a quarter of the mean, so entries without tokens stay findable when zoomed in.

export function buildModel(outline, prepare, bytes) {
  const path = outline.path;
  const n = path.length;
  const kinds = new Uint8Array(n);
  const tokens = new Float64Array(n);
  let total = 0;
  for (let i = 0; i < n; i++) {
    const e = path[i];
    kinds[i] = outline.kinds[e];
    tokens[i] = outline.tokens[e];
    total += tokens[i];
  }
  const floor = n ? Math.max(1, (total / n) * 0.25) : 1;
  const starts = new Float64Array(n + 1);
  for (let i = 0; i < n; i++) starts[i + 1] = starts[i] + tokens[i] + floor;
  const compactionKind = outline.kindNames.indexOf('compaction');
  const compactable = !!(prepare && prepare.compactable);
  const cut = compactable ? prepare.firstKeptEntryIndex : null;
  const turnStart = compactable && prepare.isSplitTurn ? prepare.turnStartIndex : null;
  // The previous compaction: the last one on the path before the cut.
  let previous = null;
  for (let i = (cut === null ? n : cut) - 1; i >= 0; i--) {
    if (kinds[i] === compactionKind) { previous = i; break; }
  }
  // The summarized region starts at the first summarized entry (after the previous
  // compaction's kept region, which /v1/prepare resolves).
  let summaryStart = null;
  if (compactable) {
    const first = prepare.summarizedEntryIds.length ? prepare.summarizedEntryIds[0] : null;
    summaryStart = cut;
    if (first !== null) {
      for (let i = 0; i < cut; i++) {
        if (outline.ids[path[i]] === first) { summaryStart = i; break; }
      }
    }
  }
  const decoder = new TextDecoder();
  return {
    outline, prepare, path, n, kinds, tokens, starts, total: starts[n], tokenTotal: total,
    cut, turnStart, previous, summaryStart, compactable,
    id(i) { return outline.ids[path[i]]; },
    kindName(i) { return outline.kindNames[kinds[i]]; },
    region(i) {
      if (cut === null) return 'not compactable';
      if (i >= cut) return 'kept';
      if (turnStart !== null && i >= turnStart) return 'turn prefix (summarized)';
      if (summaryStart !== null && i >= summaryStart) return 'summarized';
      return 'before the summarized region';
    },
    // The path position whose span holds layout unit x (clamped).
    indexAt(x) {
      let lo = 0, hi = n - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (starts[mid] <= x) lo = mid; else hi = mid - 1;
      }
      return lo;
    },
    preview(i) {
      const e = path[i];
      if (outline.previews) return outline.previews[e];
      return bytes ? previewOf(bytes, outline.offsets[e], outline.lengths[e], decoder) : '';
    },
  };
}

const PREVIEW_CHARS = 160;

// The start of an entry's text, read from the body the page sent.
export function previewOf(bytes, offset, length, decoder) {
  if (offset < 0) return '';
  let entry;
  try {
    entry = JSON.parse(decoder.decode(bytes.subarray(offset, offset + length)));
  } catch {
    return '';
  }
  const cut = (s) => (s.length > PREVIEW_CHARS ? s.slice(0, PREVIEW_CHARS) : s);
  const content = (c) => {
    if (typeof c === 'string') return cut(c);
    if (!Array.isArray(c)) return '';
    for (const b of c) {
      if (!b || typeof b !== 'object') continue;
      if ((b.type === 'text' || b.type === 'thinking') && (b.text || b.thinking)) {
        return cut(b.text || b.thinking);
      }
      if (b.type === 'toolCall') return '→ ' + cut(String(b.name));
      if (b.type === 'image') return '[image]';
    }
    return '';
  };
  const m = entry.message;
  if (m && typeof m === 'object') {
    if (typeof m.command === 'string') return '$ ' + cut(m.command);
    if (typeof m.summary === 'string') return cut(m.summary);
    return content(m.content);
  }
  if (typeof entry.summary === 'string') return cut(entry.summary);
  if (entry.content !== undefined) return content(entry.content);
  return String(entry.type || '');
}
