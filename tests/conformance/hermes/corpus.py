"""Seeded generator of adversarial hermes conversations (docs/hermes.md, "Conformance").

`generate()` returns `COUNT` cases named `gen-NNN`, each from its own `random.Random(seed)`, so
a case never moves when another changes. `audit()` fails when a feature the contract lists is
missing from the corpus (every tag of `REQUIRED` at least `MIN` times).

`HERMES_CORPUS_SEED` and `HERMES_CORPUS_COUNT` draw another corpus (a differential run on
conversations the committed goldens never saw; see the README).
"""

import json
import os
import random

import reference as R

COUNT = int(os.environ.get("HERMES_CORPUS_COUNT", "340"))
SEED = int(os.environ.get("HERMES_CORPUS_SEED", "0x5EED"), 0)
MIN = 3
# Present, but fewer: the historical prefixes are stand-ins compactd cannot recognise (H12).
RARE = ("summary-historical-0", "summary-historical-1", "summary-historical-2")

DEFAULT_ANSWER = (
    "## Historical Task Snapshot\nUser asked: 'fix the parser'\n\n## Goal\nFix the parser.\n\n"
    "## Completed Actions\n1. READ src/parse.rs — found the bug [tool: read_file]\n\n"
    "## Relevant Files\n- src/parse.rs")

WORDS = ("parser", "config", "build", "the", "a", "test", "fix", "é", "naïve", "𝒳", "👩‍💻", "🇯🇵",
         "e\u0301", "שלום", "مرحبا", "\u202eevil", "zero\u200bwidth", "nb\u00a0sp", "tab\there",
         "line\u2028sep", "ctl\x1c\x1f", "bell\x07", "del\x7f", "NUL\x00", "'quote'", '"dq"', "back\\slash",
         "{brace}", "ß", "ǅ", "١٢٣", "/src/main.rs", "~/notes.md", "C:\\tmp\\x.txt", "https://example.com/a",
         "error", "failed", "Traceback", "timed out", "MEDIA:/tmp/a.png", "<think>", "</think>", "42",
         "1e21", "-0", "ghp_ABCDEFGH12345678", "[CONTEXT SUMMARY]:", "\ufeffbom", "\U0001f600")

TOOLS = ("terminal", "read_file", "write_file", "search_files", "patch", "browser_navigate",
         "browser_click", "browser_snapshot", "web_search", "web_extract", "delegate_task",
         "execute_code", "skill_view", "skills_list", "vision_analyze", "memory", "todo", "clarify",
         "text_to_speech", "cronjob", "process", "mcp__fs__read", "Read", "unknown_tool")

CUT_LENGTHS = (40, 41, 57, 60, 61, 77, 80, 81, 199, 200, 201, 259, 260, 261, 420, 500, 501, 600, 601,
               699, 700, 701, 1200, 1385, 1400, 1401, 1500, 1501, 4000, 5999, 6000, 6001, 6002)

REQUIRED = (
    "parallel-calls", "orphan-result", "unanswered-call", "image_url", "image_url-string", "url-part",
    "input_image", "image", "multimodal", "huge-output", "huge-args", "duplicate-output",
    "invalid-args", "non-object-args", "number-args", "replay", "encrypted", "summary-current",
    "summary-legacy",
    "summary-merged", "summary-merged-h5", "content-missing", "content-null", "content-empty",
    "content-list", "content-object", "metadata", "api_content", "synthetic", "think", "media",
    "special-chars", "cut-length", "small-window", "decayed-state", "previous-summary", "focus",
    "memory", "fail-auth", "fail-network", "fail-timeout", "fail-other", "fail-blank",
    "fail-noprovider", "fail-json", "abort-setting", "h2-shape", "system", "no-system",
    "list-system", "tool-call-extras", "non-object-call", "answer-think", "answer-prefix",
    "answer-delimiter", "answer-no-snapshot", "today-null", "current-tokens", "max-tokens",
    "odd-scalar-content", "odd-call-fields",
)


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.tags = set()
        self.calls = 0

    def tag(self, *t):
        self.tags.update(t)

    def words(self, lo, hi):
        n = self.r.randint(lo, hi)
        out = []
        for _ in range(n):
            w = self.r.choice(WORDS) if self.r.random() < 0.25 else self.r.choice(WORDS[:7])
            out.append(w)
        text = " ".join(out)
        if any(w in text for w in WORDS[8:30]):
            self.tag("special-chars")
        if "MEDIA:" in text:
            self.tag("media")
        if "<think>" in text:
            self.tag("think")
        return text

    def exact(self, n):
        """A text of exactly n code points (the lengths where hermes cuts)."""
        self.tag("cut-length")
        base = self.words(n // 6 + 2, n // 4 + 4)
        while len(base) < n:
            base += " " + self.words(5, 20)
        return base[:n]

    def text(self):
        p = self.r.random()
        if p < 0.12:
            return self.exact(self.r.choice(CUT_LENGTHS))
        if p < 0.17:
            return self.words(100, 400)
        return self.words(2, 40)

    def image_part(self):
        k = self.r.randrange(6)
        if k == 0:
            self.tag("image_url")
            return {"type": "image_url", "image_url": {"url": "https://img.example/a.png", "detail": "low"}}
        if k == 1:
            self.tag("image_url")
            return {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "QUJD" * 200}}
        if k == 2:
            self.tag("image_url-string")
            return {"type": "image_url", "image_url": "http://img.example/b.jpg"}
        if k == 3:
            self.tag("url-part")
            return {"type": "image_url", "url": "https://img.example/c.gif"}
        if k == 4:
            self.tag("input_image")
            return {"type": "input_image", "image_url": "data:image/jpeg;base64,/9j/" + "A" * 300}
        self.tag("image")
        return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR" * 100}}

    def content(self, role):
        p = self.r.random()
        if p < 0.04:
            self.tag("content-missing")
            return ...
        if p < 0.08:
            self.tag("content-null")
            return None
        if p < 0.11:
            self.tag("content-empty")
            return ""
        if p < 0.25:
            self.tag("content-list")
            parts = []
            for _ in range(self.r.randint(1, 4)):
                q = self.r.random()
                if q < 0.45:
                    parts.append({"type": "text", "text": self.text()})
                elif q < 0.7:
                    parts.append(self.image_part())
                elif q < 0.78:
                    parts.append({"type": "input_text", "text": self.words(2, 8)})
                elif q < 0.84:
                    parts.append(self.words(1, 5))
                elif q < 0.9:
                    parts.append({"type": "file", "file": {"name": "a.pdf"}})
                elif q < 0.95:
                    parts.append({"no_type": True})
                else:
                    parts.append({"type": "text", "text": "", "cache_control": {"type": "ephemeral"}})
            return parts
        if p < 0.27:
            self.tag("content-object")
            return {"weird": self.words(1, 4), "n": 1.5}
        return self.text()

    def meta(self, m):
        p = self.r.random()
        if p < 0.1:
            self.tag("metadata")
            m["_db_persisted"] = True
        elif p < 0.14:
            self.tag("api_content")
            m["api_content"] = json.dumps({"role": m.get("role"), "content": "x"})
        elif p < 0.17:
            self.tag("metadata")
            m["_anthropic_content_blocks"] = [{"type": "image", "source": {"data": "xx"}}, {"type": "text", "text": "t"}]
        return m

    def msg(self, role, **extra):
        m = {"role": role}
        c = self.content(role)
        if c is not ...:
            m["content"] = c
        m.update(extra)
        if self.r.random() < 0.03:
            self.tag("odd-scalar-content")
            m["content"] = self.r.choice([5, 1.5, True, False, 0, -0.0, 1e21, 12345678901234567890])
        return self.meta(m)

    def user(self):
        m = self.msg("user")
        p = self.r.random()
        if p < 0.05:
            self.tag("synthetic")
            m[self.r.choice(["_todo_snapshot_synthetic", "_empty_recovery_synthetic",
                             "_verification_stop_synthetic", "_pre_verify_synthetic"])] = True
        elif p < 0.09:
            self.tag("synthetic")
            m["content"] = self.r.choice(["[System: Your previous response was truncated", "[IMPORTANT: Background process "]) + " x"
        return m

    def args(self, name):
        p = self.r.random()
        if p < 0.06:
            self.tag("invalid-args")
            return "{not json " + self.words(1, 5)
        if p < 0.1:
            self.tag("non-object-args")
            return self.r.choice(['[1, 2, "x"]', "42", '"just a string"', "null", "true"])
        if p < 0.16:
            self.tag("number-args")
            return '{"n": 1E2, "big": 123456789012345678901234567890, "neg": -0, "f": 1.0, "e": 1e-7, "path": "/a/b"}'
        if p < 0.2:
            self.tag("number-args")
            return '{"a":1,"a":2,"x":NaN,"y":-Infinity,"s":"\\u00e9\\ud83d\\ude00"}'
        keys = {"terminal": {"command": self.text(), "workdir": "/repo"},
                "read_file": {"path": "/src/" + self.words(1, 2), "offset": self.r.choice([1, 10, None, "x"])},
                "write_file": {"path": "/out.txt", "content": self.text()},
                "search_files": {"pattern": self.words(1, 3), "target": "files", "path": "/src"},
                "patch": {"path": "/src/lib.rs", "mode": "replace", "old": self.text(), "new": self.text()},
                "web_extract": {"urls": self.r.choice([["https://a.example", "https://b.example"], [{"url": "https://c.example"}], [{"href": "h"}], [], [5]])},
                "delegate_task": {"goal": self.text()},
                "execute_code": {"code": self.text()},
                "vision_analyze": {"question": self.text(), "image_url": "https://x"},
                "memory": {"action": "add", "target": "user", "content": self.words(2, 6)},
                "cronjob": {"action": "list"},
                "process": {"action": "poll", "session_id": "s1"},
                "browser_navigate": {"url": self.r.choice(["https://x.example", ""]), "ref": "e5"}}
        a = keys.get(name, {"q": self.text(), "limit": self.r.randint(0, 10**6), "flag": self.r.random() < 0.5})
        if self.r.random() < 0.15:
            self.tag("huge-args")
            a["blob"] = self.exact(self.r.choice([201, 500, 501, 1501, 1501]))
            a["nested"] = {"deep": [self.exact(250), {"k": self.exact(199)}]}
        s = json.dumps(a, ensure_ascii=self.r.random() < 0.3)
        if self.r.random() < 0.2:
            s = json.dumps(a, separators=(",", ":"))
        return s

    def call(self, name=None):
        self.calls += 1
        cid = f"call_{self.calls}_{self.r.randrange(1000)}"
        name = name or self.r.choice(TOOLS)
        c = {"id": cid, "type": "function", "function": {"name": name, "arguments": self.args(name)}}
        p = self.r.random()
        if p < 0.08:
            self.tag("tool-call-extras")
            c["call_id"] = "fc_" + cid
        elif p < 0.14:
            self.tag("tool-call-extras")
            c["index"] = self.r.randint(0, 3)
            c["extra_content"] = {"google": {"thought_signature": "sig" * 20}}
        return c

    def result(self, call):
        name = str((call.get("function") or {}).get("name")) if isinstance(call, dict) else "x"
        cid = call.get("id") if isinstance(call, dict) else "none"
        p = self.r.random()
        if p < 0.05:
            self.tag("huge-output")
            content = self.exact(self.r.choice([6001, 6001, 9000]))
        elif p < 0.14:
            self.tag("multimodal")
            content = {"_multimodal": True, "content": [{"type": "text", "text": "shot"}, self.image_part()],
                       "text_summary": self.r.choice(["Screenshot of page", "", self.exact(201)])}
        elif p < 0.2:
            content = [{"type": "text", "text": self.words(2, 6)}, self.image_part()]
        elif p < 0.3:
            content = '{"exit_code": %d, "output": "%s", "total_count": %d}' % (
                self.r.choice([0, 1, -1, 127]), self.words(2, 30).replace('"', "'").replace("\\", "/"), self.r.randint(0, 99))
        elif p < 0.45:
            content = self.exact(self.r.choice((199, 200, 201, 199, 200, 201, 500, 501, 6000, 6001)))
        else:
            content = self.text()
        m = {"role": "tool", "tool_call_id": cid, "content": content}
        if self.r.random() < 0.02:
            self.tag("odd-role")
            m["role"] = self.r.choice(["function", "developer", "TOOL"])
        if self.r.random() < 0.3:
            m["name"] = name
        return self.meta(m)

    def assistant(self):
        m = self.msg("assistant")
        if self.r.random() < 0.12 and isinstance(m.get("content"), str):
            self.tag("think")
            m["content"] = self.r.choice(["<think>plan " + self.words(2, 9) + "</think>", "<reasoning>x</reasoning>\n",
                                          "<thinking>unterminated ", "<tool_call>{}</tool_call> "]) + m["content"]
        if self.r.random() < 0.1:
            self.tag("replay", "encrypted")
            m["reasoning_details"] = [{"type": "reasoning.encrypted", "data": "gAAAA" + "Zm9v" * self.r.randint(10, 400)}]
            m["codex_reasoning_items"] = [{"id": "rs_1", "encrypted_content": "enc" * self.r.randint(10, 200)}]
        elif self.r.random() < 0.08:
            self.tag("replay")
            m["reasoning"] = self.r.choice([self.words(2, 30), "", None, 0, False])
            m["reasoning_content"] = self.r.choice(["r", {"k": [1, 2]}, None])
        return m

    def tool_round(self, out):
        k = self.r.choice([1, 1, 1, 1, 2, 3, 6])
        calls = [self.call() for _ in range(k)]
        if k > 1:
            self.tag("parallel-calls")
        if self.r.random() < 0.04:
            self.tag("non-object-call")
            calls.append("not-a-call")
        a = self.assistant()
        a["tool_calls"] = calls
        if self.r.random() < 0.03:
            self.tag("odd-call-fields")
            c0 = calls[0]
            k = self.r.randrange(5)
            if k == 0:
                c0["id"] = self.r.choice([None, 7, ""])
            elif k == 1:
                c0["function"]["arguments"] = {"path": "/x", "n": 1}
            elif k == 2:
                c0["function"]["name"] = self.r.choice([None, 3, ""])
            elif k == 3:
                c0["type"] = None
            else:
                c0.pop("function")
        if self.r.random() < 0.5:
            a["content"] = self.r.choice(["", None, self.words(1, 8)])
        out.append(a)
        answered = [c for c in calls if isinstance(c, dict)]
        if self.r.random() < 0.08 and answered:
            self.tag("unanswered-call")
            answered = answered[:-1]
        results = [self.result(c) for c in answered]
        if self.r.random() < 0.15 and len(results) > 1:
            self.r.shuffle(results)
        out.extend(results)
        if self.r.random() < 0.06:
            self.tag("orphan-result")
            out.append({"role": "tool", "tool_call_id": "call_orphan_%d" % self.r.randrange(99), "content": self.text()})
        if self.r.random() < 0.1 and results and isinstance(results[-1].get("content"), str) and len(results[-1]["content"]) >= 200:
            self.tag("duplicate-output")
            c2 = self.call(name=str((answered[-1].get("function") or {}).get("name")))
            a2 = {"role": "assistant", "content": None, "tool_calls": [c2]}
            out.append(a2)
            out.append({"role": "tool", "tool_call_id": c2["id"], "content": results[-1]["content"]})

    def earlier_summary(self):
        body = "## Historical Task Snapshot\nUser asked: 'earlier task'\n\n## Goal\n" + self.words(3, 40)
        k = self.r.randrange(10)
        if k < 4:
            self.tag("summary-current")
            text = R.CONF_TEXTS["prefix"] + "\n" + body + "\n\n" + R.END_MARKER
        elif k < 6:
            self.tag("summary-legacy")
            text = "[CONTEXT SUMMARY]: " + body
        elif k == 6 and self.r.random() < 0.5:
            # Stand-ins (H12): compactd knows hermes's real historical prefixes by digest,
            # so these cases compare for hermes's logic only (see README).
            j = self.r.randrange(3)
            self.tag(f"summary-historical-{j}")
            text = R.CONF_HISTORICAL[j] + "\n" + body + "\n\n" + R.END_MARKER
        elif k == 6:
            self.tag("summary-current")
            text = R.CONF_TEXTS["prefix"] + body
        elif k < 9:
            self.tag("summary-merged")
            old = self.r.choice(["", self.words(1, 12)])
            text = (R.HEADER + "\n" + old + "\n\n" + R.DELIMITER + "\n\n" + R.CONF_TEXTS["prefix"] + "\n" + body
                    + "\n\n" + R.END_MARKER)
            return {"role": self.r.choice(["user", "assistant"]), "content": text, "_compressed_summary": True}
        else:
            self.tag("summary-merged-h5")
            old = self.r.choice(["", self.words(1, 12)])
            text = R.CONF_TEXTS["prefix"] + "\n" + body + "\n\n" + R.END_MARKER + ("\n\n" + old if old else "")
            return {"role": "user", "content": text, "_compressed_summary": True}
        role = self.r.choice(["user", "user", "assistant"])
        m = {"role": role, "content": text}
        if self.r.random() < 0.5:
            m["_compressed_summary"] = True
        if self.r.random() < 0.15:
            m["content"] = [{"type": "text", "text": text}]
        return m

    def conversation(self):
        out = []
        p = self.r.random()
        if p < 0.6:
            self.tag("system")
            sys_c = self.r.choice(["You are hermes. " + self.words(2, 20), "", None,
                                   [{"type": "text", "text": "sys " + self.words(1, 5)}],
                                   "sys\n\n" + R.CONF_TEXTS["sysnote"]])
            if isinstance(sys_c, list):
                self.tag("list-system")
            out.append({"role": "system", "content": sys_c})
        else:
            self.tag("no-system")
        if self.r.random() < 0.25:
            out.append(self.earlier_summary())
        turns = self.r.randint(1, 7)
        for t in range(turns):
            out.append(self.user())
            for _ in range(self.r.choice([0, 1, 1, 2, 3])):
                self.tool_round(out)
            if self.r.random() < 0.8:
                out.append(self.assistant())
            if self.r.random() < 0.07:
                out.append(self.earlier_summary())
        if self.r.random() < 0.1:
            self.tool_round(out)
        return out

    def h2_shape(self):
        self.tag("h2-shape", "parallel-calls")
        out = [{"role": "system", "content": "sys"}] if self.r.random() < 0.5 else []
        out.append({"role": "user", "content": self.words(3, 12)})
        calls = [self.call() for _ in range(self.r.randint(6, 10))]
        out.append({"role": "assistant", "content": "", "tool_calls": calls})
        out.extend(self.result(c) for c in calls)
        return out

    def stub(self):
        p = self.r.random()
        table = [
            (0.05, "fail-auth", {"error": "status", "message": "401 Incorrect API key provided"}),
            (0.07, "fail-auth", {"error": "status", "message": "403 Forbidden"}),
            (0.09, "fail-auth", {"error": "other", "message": "insufficient_quota: out of credits"}),
            (0.12, "fail-network", {"error": "connection", "message": "connection refused"}),
            (0.14, "fail-timeout", {"error": "other", "message": "Request timed out."}),
            (0.18, "fail-other", {"error": "other", "message": "HTTP 500: upstream exploded " + self.words(0, 60)}),
            (0.20, "fail-other", {"error": "status", "message": "429 rate limited"}),
            (0.225, "fail-blank", {"text": "  \n\t "}),
            (0.24, "fail-noprovider", {"error": "other", "message": "No LLM provider configured for compression"}),
            (0.26, "fail-json", {"error": "json", "message": "<html>502</html>"}),
            (0.29, "answer-think", {"text": "<think>let me think " + self.words(1, 9) + "</think>\n" + DEFAULT_ANSWER}),
            (0.30, "answer-think", {"text": "<think>only thoughts</think>"}),
            (0.32, "answer-prefix", {"text": R.CONF_TEXTS["prefix"] + "\n" + DEFAULT_ANSWER}),
            (0.34, "answer-delimiter", {"text": "junk\n" + R.DELIMITER + "\n" + DEFAULT_ANSWER + "\n\n" + R.END_MARKER}),
            (0.38, "answer-no-snapshot", {"text": "## Goal\n" + self.words(3, 80) + "\n\nMEDIA:/x.png 𝒳"}),
        ]
        for edge, tag, stub in table:
            if p < edge:
                self.tag(tag)
                return stub
        return {"text": DEFAULT_ANSWER}


def surrogate_fix(value):
    """H11: lone surrogates become U+FFFD in the reference input."""
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace") if any(
            0xD800 <= ord(ch) <= 0xDFFF for ch in value) else value
    if isinstance(value, list):
        return [surrogate_fix(v) for v in value]
    if isinstance(value, dict):
        return {k: surrogate_fix(v) for k, v in value.items()}
    return value


def one(i, gen=Gen, seed=SEED, name=None):
    g = gen(seed + i * 7919)
    r = g.r
    messages = g.h2_shape() if r.random() < 0.05 else g.conversation()
    if r.random() < 0.04:
        g.tag("H11")
        messages.append({"role": "user", "content": "lone \ud83d surrogate"})
    messages = surrogate_fix(messages)
    small = r.random() < 0.7
    ctx = r.choice([2048, 4096, 6000, 8000, 12000, 16000, 32000]) if small else r.choice(
        [65536, 128000, 200000, 400000, 512000, 1000000])
    if small:
        g.tag("small-window")
    settings = {}
    if r.random() < 0.3:
        settings["thresholdPercent"] = r.choice([0.3, 0.8, 0.9, 0.95])
    if r.random() < 0.4:
        settings["targetRatio"] = r.choice([0.05, 0.1, 0.15, 0.5, 0.9])
    if r.random() < 0.4:
        settings["protectFirstN"] = r.choice([0, 1, 2, 5])
    if r.random() < 0.4:
        settings["protectLastN"] = r.choice([0, 1, 3, 5, 8, 40])
    if r.random() < 0.1:
        g.tag("max-tokens")
        settings["maxTokens"] = r.choice([0, 1024, 4096, ctx // 2, ctx])
    if r.random() < 0.06:
        g.tag("abort-setting")
        settings["abortOnSummaryFailure"] = True
    state = {}
    if r.random() < 0.2:
        g.tag("decayed-state")
        state["compressionCount"] = r.randint(1, 5)
    if r.random() < 0.15:
        g.tag("previous-summary", "decayed-state")
        state["previousSummary"] = "## Goal\nearlier " + g.words(2, 30)
    case = {"name": name or f"gen-{i:03d}", "messages": messages, "contextLength": ctx, "settings": settings,
            "state": state, "stub": g.stub()}
    if r.random() < 0.15:
        g.tag("focus")
        case["focusTopic"] = r.choice(["the parser", "  spaced  ", "multi\nline focus {focus}", "é𝒳"])
    if r.random() < 0.12:
        g.tag("memory")
        case["memoryContext"] = r.choice(["User prefers Rust. <b>&</b>", "   ", "m " * 3500, "line1\nline2 \"q\""])
    if r.random() < 0.05:
        g.tag("today-null")
        case["today"] = None
    if r.random() < 0.1:
        g.tag("current-tokens")
        case["currentTokens"] = r.choice([0, 10, 10**6])
    case["tags"] = sorted(g.tags)
    return case


def generate():
    cs = [one(i) for i in range(COUNT)]
    audit(cs)
    return cs


def audit(cs):
    counts = {t: 0 for t in REQUIRED}
    for c in cs:
        for t in c["tags"]:
            if t in counts:
                counts[t] += 1
    for c in cs:
        for t in c["tags"]:
            if t in RARE:
                counts[t] = counts.get(t, 0) + 1
    missing = {t: n for t, n in counts.items() if n < MIN and t not in RARE}
    missing.update({t: 0 for t in RARE if counts.get(t, 0) < 1})
    assert not missing, f"corpus misses features: {missing}"
    return counts
