"""Seeded generator of whitespace edge cases around the markers (docs/hermes.md §8, §11, §13).

`generate()` returns `COUNT` cases named `edge-NNN`, each from its own `random.Random(seed)`
like corpus.py. Every case puts Python whitespace (and look-alikes that are not whitespace
for `str.strip`) around what hermes finds by substring or prefix: an earlier summary's prefix,
end marker and merge delimiter (standalone, hermes's merged form, the H5 form, list content,
the marker twice), the system note (present, twice, padded, split, hermes's opening only),
the summarizer's answer and the carried `previousSummary`. Lengths sit where hermes cuts.

`HERMES_EDGE_SEED` and `HERMES_EDGE_COUNT` draw another set (see the README).
"""

import os
import random

import corpus
import reference as R

COUNT = int(os.environ.get("HERMES_EDGE_COUNT", "160"))
SEED = int(os.environ.get("HERMES_EDGE_SEED", "0xED6E"), 0)
MIN = 3

PREFIX = R.CONF_TEXTS["prefix"]
NOTE = R.CONF_TEXTS["sysnote"]
END = R.END_MARKER
# hermes's own note opens with this (short enough to stay an interop fact, H12).
HERMES_NOTE_OPENING = "[Note: Some earlier conversation turns have been compacted"

# Whitespace for `str.isspace` (ASCII, the \x1c-\x1f separators, NEL, NBSP, U+2028, U+3000)
# and two characters that are not (ZWSP, BOM).
WS = ("", " ", "  ", "\t", "\n", "\n\n", " \n\n", "   \n\n  ", "\r\n", "\r\n\r\n", "\t \n", "\x0b", "\x0c",
      "\x1c", "\x1f", "\x85", "\xa0", "\u2028", "\u3000", " \t\r\n ", "\n\n\n   ", "\u200b", "\ufeff")

# Single code points `str.isspace` knows (the squeezes keep one per run), and look-alikes.
SPACES = (" ", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\xa0", "\u1680",
          "\u2000", "\u200a", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000", "\u200b", "\ufeff", "\u180e")
# (length, position) pairs where hermes cuts a text and strips the cut: the auto focus
# (260 → 259, and 699 of the whole block, about 151 into its third text), the task snapshot
# (1400 → 1385), a fallback turn (700 → 685), a fallback line (600 → 420 + the last 160).
CUTS = ((300, 258), (300, 259), (261, 259), (300, 151), (300, 150), (1401, 1384), (1401, 1385), (701, 684),
        (701, 685), (601, 419), (601, 420), (601, 440), (601, 441))

REQUIRED = ("ws-summary-standalone", "ws-summary-legacy", "ws-summary-merged", "ws-summary-h5",
            "ws-summary-list", "ws-summary-twice", "ws-summary-empty-body", "ws-note-present",
            "ws-note-twice", "ws-note-split", "ws-note-opening", "ws-note-list", "ws-note-blank", "ws-note-scalar",
            "ws-answer", "ws-previous-summary", "ws-cut", "ws-error-cut", "ws-summary-tail", "ws-system-later", "cut-length")


class Edge(corpus.Gen):
    def ws(self):
        return self.r.choice(WS)

    def cut_text(self, n, at):
        """A text of n code points with whitespace on and next to position `at`."""
        self.tag("ws-cut")
        chars = list(self.exact(n))
        for pos in self.r.sample(range(at - 3, at + 3), self.r.randint(1, 3)):
            if 0 <= pos < n:
                chars[pos] = self.r.choice(SPACES)
        return "".join(chars)

    def user(self):
        if self.r.random() < 0.3:
            return {"role": "user", "content": self.cut_text(*self.r.choice(CUTS))}
        return super().user()

    def body(self):
        if self.r.random() < 0.4:
            return "## Historical Task Snapshot\n" + self.exact(self.r.choice(corpus.CUT_LENGTHS[:22]))
        return "## Historical Task Snapshot\nUser asked: 'earlier'\n\n## Goal\n" + self.words(2, 30)

    def summary_text(self):
        w, body = self.ws, self.body()
        k = self.r.randrange(7)
        if k == 0:
            self.tag("ws-summary-standalone")
            return w() + PREFIX + w() + body + w() + END + w() + w()
        if k == 1:
            self.tag("ws-summary-legacy")
            return w() + "[CONTEXT SUMMARY]:" + w() + body + self.r.choice(["", w() + END]) + w()
        if k == 2:
            self.tag("ws-summary-merged")
            old = self.r.choice(["", w(), self.words(1, 8)])
            return (w() + R.HEADER + w() + old + w() + R.DELIMITER + w() + PREFIX + w() + body + w() + END + w())
        if k == 3:
            self.tag("ws-summary-h5")
            old = self.r.choice(["", w() + w(), self.words(1, 8) + w(), w() + self.words(1, 3)])
            return w() + PREFIX + w() + body + w() + END + w() + old
        if k == 4:
            self.tag("ws-summary-twice")
            return PREFIX + w() + body + w() + END + w() + self.r.choice(["", "tail"]) + w() + END + w()
        if k == 5:
            self.tag("ws-summary-empty-body")
            return w() + PREFIX + w() + self.r.choice(["", END]) + w()
        self.tag("ws-summary-standalone")
        return PREFIX + "\n" + body + "\n\n" + END + self.r.choice(["  \n\n", "\n\n\n", " \t ", "\r\n", "\x1c\n"])

    def summary_message(self):
        text = self.summary_text()
        m = {"role": self.r.choice(["user", "user", "assistant"]), "content": text}
        if self.r.random() < 0.25:
            self.tag("ws-summary-list")
            cut = text.find(END)
            if cut > 0 and self.r.random() < 0.5:
                m["content"] = [{"type": "text", "text": text[:cut]}, {"type": "text", "text": text[cut:]}, self.ws()]
            else:
                m["content"] = [self.r.choice(["", " ", {"type": "text", "text": "\n"}]), {"type": "text", "text": text}]
        if self.r.random() < 0.5:
            m["_compressed_summary"] = True
        return m

    def system(self):
        w = self.ws
        k = self.r.randrange(10)
        if k == 0:
            self.tag("ws-note-present")
            return "You are hermes." + w() + NOTE + w()
        if k == 1:
            self.tag("ws-note-present")
            return w() + NOTE + w()
        if k == 2:
            self.tag("ws-note-twice")
            return "sys" + w() + NOTE + w() + NOTE + w()
        if k == 3:
            self.tag("ws-note-split")
            cut = self.r.randrange(1, len(NOTE))
            return self.r.choice(["sys\n\n" + NOTE[:cut] + w() + NOTE[cut:],
                                  [{"type": "text", "text": NOTE[:cut]}, {"type": "text", "text": NOTE[cut:]}]])
        if k == 4:
            self.tag("ws-note-opening")
            return "sys\n\n" + HERMES_NOTE_OPENING + self.r.choice(["", " into a summary.", w()])
        if k == 5:
            self.tag("ws-note-list")
            return [{"type": "text", "text": "sys"}, self.r.choice([w(), {"type": "text", "text": w() + NOTE + w()}]),
                    self.r.choice(["", {"type": "text", "text": NOTE}, w()])]
        if k == 6:
            self.tag("ws-note-blank")
            return self.r.choice([w(), w() + w(), [w()], [], [{"type": "text", "text": w()}]])
        if k == 7:
            self.tag("ws-note-present")
            return "sys" + w() + NOTE[:-1] + w()
        if k == 8:
            self.tag("ws-note-scalar")
            return self.r.choice([5, 1.5, True, False, 0, -0.0, 1e21, 12345678901234567890, {"text": NOTE},
                                  {"a": "é\n" + w(), "n": [1.0, None]}, [NOTE + w()], [w(), NOTE]])
        return "You are hermes. " + self.exact(self.r.choice(corpus.CUT_LENGTHS[:12])) + w()

    def turn(self, out):
        out.append(self.user())
        if self.r.random() < 0.3:
            self.tool_round(out)
        if self.r.random() < 0.85:
            out.append(self.assistant())

    def conversation(self):
        out = []
        if self.r.random() < 0.8:
            out.append({"role": "system", "content": self.system()})
        where = self.r.randrange(4)
        if where == 0:
            out.append(self.summary_message())
        for _ in range(self.r.randint(1, 6)):
            self.turn(out)
            if where == 1 and self.r.random() < 0.4:
                out.append(self.summary_message())
        if where == 2:
            k = self.r.randrange(1, len(out) + 1)
            out.insert(k, self.summary_message())
        if where == 3 or self.r.random() < 0.15:
            out.insert(min(len(out), self.r.randint(1, 3)), self.summary_message())
        for _ in range(self.r.randint(2, 5)):
            self.turn(out)
        if self.r.random() < 0.15:
            # In the tail: found by no search, but it decays the head and is no focus.
            self.tag("ws-summary-tail")
            out.insert(len(out) - self.r.randint(0, 2), self.summary_message())
        if self.r.random() < 0.05:
            self.tag("ws-system-later")
            out.insert(self.r.randint(1, len(out)), {"role": "system", "content": self.system()})
        return out

    def answer(self):
        w = self.ws
        if self.r.random() < 0.1:
            # hermes cuts a failure reason over 220 at 217 and strips it.
            self.tag("ws-error-cut")
            return {"error": "other", "message": self.cut_text(self.r.choice([221, 230]), self.r.choice([216, 217, 218]))}
        if self.r.random() < 0.35:
            self.tag("ws-answer")
            k = self.r.randrange(5)
            body = corpus.DEFAULT_ANSWER
            if k == 0:
                return {"text": w() + body + w() + END + w() + w()}
            if k == 1:
                return {"text": w() + PREFIX + w() + body + w()}
            if k == 2:
                return {"text": "old" + w() + R.DELIMITER + w() + PREFIX + w() + body + w() + END + w()}
            if k == 3:
                return {"text": w() + "<think>x</think>" + w() + body + w()}
            return {"text": body + w() + END + w() + "after" + w()}
        return self.stub()


def one(i):
    g = Edge(SEED + i * 7919)
    r = g.r
    messages = g.conversation()
    ctx = r.choice([2048, 3000, 4096, 6000, 8000, 12000])
    settings = {}
    if r.random() < 0.5:
        settings["protectFirstN"] = r.choice([0, 1, 2, 3, 5])
    if r.random() < 0.5:
        settings["protectLastN"] = r.choice([0, 1, 2, 3, 5])
    if r.random() < 0.3:
        settings["targetRatio"] = r.choice([0.05, 0.1, 0.5])
    state = {}
    if r.random() < 0.3:
        state["compressionCount"] = r.randint(1, 3)
    if r.random() < 0.3:
        g.tag("ws-previous-summary")
        state["previousSummary"] = r.choice([
            g.ws() + "## Goal\nearlier" + g.ws() + END + g.ws(),
            PREFIX + g.ws() + "## Goal\nprev" + g.ws(),
            g.ws() + g.ws(),
            "## Goal\n" + g.exact(r.choice(corpus.CUT_LENGTHS[:12])) + g.ws()])
    case = {"name": f"edge-{i:03d}", "messages": messages, "contextLength": ctx, "settings": settings,
            "state": state, "stub": g.answer()}
    if r.random() < 0.1:
        case["focusTopic"] = g.ws() + "the parser" + g.ws()
    case["tags"] = sorted(g.tags)
    return case


def generate():
    cs = [one(i) for i in range(COUNT)]
    counts = {t: sum(t in c["tags"] for c in cs) for t in REQUIRED}
    missing = {t: n for t, n in counts.items() if n < MIN}
    assert not missing, f"edge corpus misses features: {missing}"
    return cs
