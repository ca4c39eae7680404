// The timeline: one mark per path entry, drawn on a canvas. Only the visible span is
// drawn, at most one mark per pixel column, so 100,000 entries cost one pass over the
// visible ones and no DOM. The focused entry is the keyboard's cursor; it is announced
// through an aria-live region by the caller (onFocus).

import { KIND_COLORS, fmt } from './format.js';

const BAND_TOP = 30;
const BAND_HEIGHT = 70;

export class Timeline {
  constructor(canvas, { onFocus, onHover }) {
    this.canvas = canvas;
    this.onFocus = onFocus;
    this.onHover = onHover;
    this.model = null;
    this.focus = null;
    this.hover = null;
    this.x0 = 0;
    this.x1 = 1;
    this.w = 1;
    this.drag = null;
    canvas.addEventListener('keydown', (e) => this.key(e));
    canvas.addEventListener('mousemove', (e) => this.move(e));
    canvas.addEventListener('mouseleave', () => { this.hover = null; this.draw(); });
    canvas.addEventListener('mousedown', (e) => { this.drag = { x: e.clientX, x0: this.x0, moved: false }; });
    window.addEventListener('mouseup', () => { this.drag = null; });
    canvas.addEventListener('click', (e) => {
      if (!this.model || this.dragged) { this.dragged = false; return; }
      this.setFocus(this.indexAtClient(e.clientX), false);
    });
    canvas.addEventListener('wheel', (e) => {
      if (!this.model) return;
      e.preventDefault();
      this.zoom(e.deltaY < 0 ? 0.8 : 1.25, this.unitAtClient(e.clientX));
    }, { passive: false });
    new ResizeObserver(() => this.draw()).observe(canvas);
  }

  setModel(model, keepView) {
    const old = this.model;
    this.model = model;
    if (!keepView || !old || old.total !== model.total) { this.x0 = 0; this.x1 = model.total || 1; }
    if (this.focus !== null && this.focus >= model.n) this.focus = null;
    this.canvas.setAttribute('aria-label',
      `Timeline of ${fmt(model.n)} entries on the path` +
      (model.cut !== null ? `; cut before entry ${model.cut}` : '; not compactable'));
    this.canvas.dataset.cutIndex = model.cut === null ? '' : String(model.cut);
    this.draw();
  }

  width() { return this.canvas.clientWidth || 1; }
  unitAtClient(clientX) {
    const r = this.canvas.getBoundingClientRect();
    return this.x0 + ((clientX - r.left) / this.width()) * (this.x1 - this.x0);
  }
  indexAtClient(clientX) { return this.model.indexAt(this.unitAtClient(clientX)); }
  // CSS pixels from the canvas's left edge of layout unit x (at the width of the last
  // draw: reading clientWidth per mark would cost a DOM call per entry).
  px(x) { return ((x - this.x0) / (this.x1 - this.x0)) * this.w; }

  zoom(factor, at) {
    const m = this.model;
    const span = Math.min(m.total, Math.max((this.x1 - this.x0) * factor, m.total / 1e6, 1));
    const ratio = (at - this.x0) / (this.x1 - this.x0);
    this.x0 = at - ratio * span;
    this.x1 = this.x0 + span;
    this.clampView();
    this.draw();
  }

  clampView() {
    const span = this.x1 - this.x0;
    if (this.x0 < 0) { this.x0 = 0; this.x1 = span; }
    if (this.x1 > this.model.total) { this.x1 = this.model.total; this.x0 = Math.max(0, this.x1 - span); }
  }

  // Shows entries i-radius..i+radius, i centred.
  zoomTo(i, radius) {
    const m = this.model;
    const a = m.starts[Math.max(0, i - radius)];
    const b = m.starts[Math.min(m.n, i + radius + 1)];
    this.x0 = a; this.x1 = Math.max(b, a + 1);
    this.clampView();
  }

  setFocus(i, jump) {
    const m = this.model;
    if (!m || !m.n || i === null || i === undefined) return;
    i = Math.max(0, Math.min(m.n - 1, i));
    this.focus = i;
    if (jump) this.zoomTo(i, 40);
    else if (m.starts[i] < this.x0 || m.starts[i + 1] > this.x1) {
      const span = this.x1 - this.x0;
      this.x0 = (m.starts[i] + m.starts[i + 1]) / 2 - span / 2;
      this.x1 = this.x0 + span;
      this.clampView();
    }
    this.canvas.dataset.focus = String(i);
    this.draw();
    this.onFocus(i);
  }

  key(e) {
    const m = this.model;
    if (!m || !m.n) return;
    const at = this.focus === null ? (m.cut === null ? 0 : m.cut) : this.focus;
    const step = e.shiftKey ? 10 : 1;
    const keys = {
      ArrowRight: () => this.setFocus(this.focus === null ? at : at + step),
      ArrowLeft: () => this.setFocus(this.focus === null ? at : at - step),
      PageDown: () => this.setFocus(at + 100),
      PageUp: () => this.setFocus(at - 100),
      Home: () => this.setFocus(0),
      End: () => this.setFocus(m.n - 1),
      c: () => m.cut !== null && this.setFocus(m.cut, true),
      t: () => m.turnStart !== null && this.setFocus(m.turnStart, true),
      '+': () => this.zoom(0.5, this.focusUnit()),
      '=': () => this.zoom(0.5, this.focusUnit()),
      '-': () => this.zoom(2, this.focusUnit()),
      '0': () => { this.x0 = 0; this.x1 = m.total; this.draw(); },
    };
    const f = keys[e.key];
    if (f) { e.preventDefault(); f(); }
  }

  focusUnit() {
    const m = this.model;
    return this.focus === null ? (this.x0 + this.x1) / 2 : (m.starts[this.focus] + m.starts[this.focus + 1]) / 2;
  }

  move(e) {
    if (!this.model || !this.model.n) return;
    if (this.drag && (e.buttons & 1)) {
      const dx = e.clientX - this.drag.x;
      if (Math.abs(dx) > 3) { this.drag.moved = true; this.dragged = true; }
      if (this.drag.moved) {
        const span = this.x1 - this.x0;
        this.x0 = this.drag.x0 - (dx / this.width()) * span;
        this.x1 = this.x0 + span;
        this.clampView();
        this.draw();
        return;
      }
    }
    const i = this.indexAtClient(e.clientX);
    if (i !== this.hover) {
      this.hover = i;
      this.draw();
      this.onHover(i);
    }
  }

  draw() {
    const c = this.canvas;
    const w = c.clientWidth, h = c.clientHeight;
    if (!w || !h) return;
    this.w = w;
    const dpr = window.devicePixelRatio || 1;
    if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) {
      c.width = Math.round(w * dpr); c.height = Math.round(h * dpr);
    }
    const g = c.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, h);
    const m = this.model;
    if (!m || !m.n) return;
    g.font = '11px system-ui, sans-serif';
    g.textBaseline = 'middle';
    // Regions behind the marks.
    const band = (a, b, colour, label) => {
      const x = Math.max(0, this.px(m.starts[a])), y = Math.min(w, this.px(m.starts[b]));
      if (y <= x) return;
      g.fillStyle = colour;
      g.fillRect(x, 18, y - x, BAND_HEIGHT + 24);
      if (label && y - x > 70) {
        g.fillStyle = '#37474f';
        g.fillText(label, x + 4, 12);
      }
    };
    if (m.cut !== null) {
      band(m.summaryStart, m.turnStart === null ? m.cut : m.turnStart, '#fff3e0', 'to summarize');
      if (m.turnStart !== null) band(m.turnStart, m.cut, '#e3f2fd', 'turn prefix');
      band(m.cut, m.n, '#e8f5e9', 'kept');
    }
    // Marks: one pass over the visible entries, one mark per pixel column at most.
    const first = m.indexAt(this.x0);
    let drawnTo = -Infinity;
    for (let i = first; i < m.n && m.starts[i] < this.x1; i++) {
      const b = this.px(m.starts[i + 1]);
      if (b <= drawnTo) continue; // this column already has a mark
      const a = Math.max(this.px(m.starts[i]), drawnTo);
      const end = Math.max(b - (b - a > 4 ? 1 : 0), a + 1);
      g.fillStyle = KIND_COLORS[m.outline.kindNames[m.kinds[i]]] || '#999';
      const frac = Math.min(1, Math.sqrt(m.tokens[i] / 4000));
      const hh = 12 + (BAND_HEIGHT - 12) * frac;
      g.fillRect(a, BAND_TOP + BAND_HEIGHT - hh, end - a, hh);
      drawnTo = end;
    }
    // Lines: previous compaction, turn start, cut.
    const line = (i, colour, dash, label, row) => {
      if (i === null) return null;
      const x = this.px(m.starts[i]);
      if (x < -1 || x > w + 1) return null;
      g.strokeStyle = colour; g.lineWidth = 2; g.setLineDash(dash);
      g.beginPath(); g.moveTo(x, 18); g.lineTo(x, BAND_TOP + BAND_HEIGHT + 6); g.stroke();
      g.setLineDash([]);
      g.fillStyle = colour;
      const tw = g.measureText(label).width;
      g.fillText(label, Math.min(Math.max(2, x - tw / 2), w - tw - 2), BAND_TOP + BAND_HEIGHT + 14 + row * 12);
      return x;
    };
    line(m.previous, '#ef6c00', [3, 3], 'previous compaction', 1);
    line(m.turnStart, '#1565c0', [6, 3], 'turn start', 1);
    const cutX = line(m.cut, '#c62828', [], 'cut', 0);
    c.dataset.cutX = cutX === null ? '' : cutX.toFixed(2);
    // Hover and focus.
    const box = (i, colour, width) => {
      if (i === null) return;
      const a = this.px(m.starts[i]), b = Math.max(this.px(m.starts[i + 1]), a + 2);
      if (b < 0 || a > w) return;
      g.strokeStyle = colour; g.lineWidth = width;
      g.strokeRect(a - 1, BAND_TOP - 4, b - a + 2, BAND_HEIGHT + 8);
    };
    box(this.hover, '#546e7a', 1);
    box(this.focus, '#1d2330', 2);
    // Scale: tokens at both ends of the view.
    g.fillStyle = '#5b6475';
    const tokensAt = (x) => {
      const i = m.indexAt(x);
      // Layout units are tokens plus a floor per entry: take the floors out.
      return Math.max(0, x - (m.starts[i] - sumTokens(m, i)));
    };
    g.fillText(`${fmt(tokensAt(this.x0))} tokens into the path`, 4, h - 8);
    const right = `${fmt(tokensAt(this.x1))} tokens`;
    g.fillText(right, w - g.measureText(right).width - 4, h - 8);
  }
}

// Tokens of the entries before position i, memoised per model.
function sumTokens(m, i) {
  if (!m.tokenPrefix) {
    m.tokenPrefix = new Float64Array(m.n + 1);
    for (let k = 0; k < m.n; k++) m.tokenPrefix[k + 1] = m.tokenPrefix[k] + m.tokens[k];
  }
  return m.tokenPrefix[i];
}
