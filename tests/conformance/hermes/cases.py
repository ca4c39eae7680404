"""Hand-written cases: one or more per rule and per divergence of docs/hermes.md.

Each case is a dict like the generator's (`name`, `messages`, `contextLength`, optional
`settings`, `state`, `focusTopic`, `memoryContext`, `currentTokens`, `today`, `stub`), and its
name says what it pins down. The divergences each case exercises are found by the harness
(it runs hermes unpatched and patched) and written into the golden.
"""

import reference as R

END = R.END_MARKER
PREFIX = R.CONF_TEXTS["prefix"]
BODY = "## Historical Task Snapshot\nUser asked: 'old task'\n\n## Goal\nold goal"
SUMMARY = PREFIX + "\n" + BODY


def u(text, **kw):
    return {"role": "user", "content": text, **kw}


def a(text, **kw):
    return {"role": "assistant", "content": text, **kw}


def call(cid, name="terminal", args='{"command": "ls"}'):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


def tool(cid, text):
    return {"role": "tool", "tool_call_id": cid, "content": text}


def chat(n, size=400):
    """n user/assistant pairs of `size` characters each."""
    out = []
    for i in range(n):
        out.append(u(f"question {i} " + "q" * size))
        out.append(a(f"answer {i} " + "a" * size))
    return out


SYS = {"role": "system", "content": "You are hermes."}
SMALL = 4096  # threshold 3481, tail budget 696 tokens


def cases():
    cs = []

    def add(name, messages, **kw):
        cs.append({"name": "hand-" + name, "messages": messages, "contextLength": kw.pop("ctx", SMALL), **kw})

    # §5.1 too few messages; §5.3 nothing to compress.
    add("too-few-exact", [SYS] + chat(4)[:7])
    add("too-few-protect0", chat(2), settings={"protectFirstN": 0})
    add("basic-first-compaction", [SYS] + chat(12))
    add("basic-no-system", chat(12))
    add("basic-big-window", [SYS] + chat(40, 3000), ctx=200000)
    # §7 tail cut and anchors.
    add("tail-last-user-at-head", [SYS, u("only ask " + "x" * 3000)] + [a("step " + "y" * 900) for _ in range(10)],
        settings={"protectFirstN": 0})
    add("tail-no-visible-assistant", [SYS] + [u("u" * 900) for _ in range(6)] + [a(None, tool_calls=[call("c1")]), tool("c1", "ok")])
    add("tail-call-group", [SYS] + chat(6) + [a("", tool_calls=[call("c1"), call("c2")]), tool("c1", "r" * 3000),
                                              tool("c2", "s" * 3000), a("done"), u("next")])
    add("protect-last-0", [SYS] + chat(10), settings={"protectLastN": 0})
    add("target-ratio-clamped", [SYS] + chat(10), settings={"targetRatio": 0.01})
    add("max-tokens-window", [SYS] + chat(10), settings={"maxTokens": 2000})
    add("max-tokens-over-window", [SYS] + chat(10), settings={"maxTokens": 5000})
    add("threshold-large-window", chat(10), ctx=1000000, settings={"thresholdPercent": 0.3})
    add("current-tokens", [SYS] + chat(10), currentTokens=100)
    # §6 prune.
    out = [SYS, u("start")]
    for i in range(8):
        out += [a("", tool_calls=[call(f"c{i}", "read_file", '{"path": "/a.py", "offset": %d}' % i)]),
                tool(f"c{i}", "same output " + "z" * 300)]
    add("prune-dedupe-all", out + chat(3))
    add("prune-args-reserialize", [SYS, u("go")] + [a("", tool_calls=[call("c1", "patch", '{"a":1,"path":"/x","new":"' + "n" * 600 + '"}')]),
                                                     tool("c1", "p" * 250)] + chat(6))
    # §8 earlier summaries and the divergences H6, H7, H9.
    add("summary-in-head-resumed", [SYS, u(SUMMARY + "\n\n" + END, _compressed_summary=True)] + chat(8))
    add("summary-h7-fresh-state", [SYS, u("first ask"), a("ok"), u(SUMMARY + "\n\n" + END)] + chat(8))
    add("summary-h6-dropped-head", [SYS, u("original task " + "t" * 200), a("ack " + "k" * 200), u(SUMMARY + "\n\n" + END)] + chat(8),
        state={"compressionCount": 1})
    add("summary-h6-merged-own-text", [SYS, {"role": "user", "content": R.HEADER + "\nthe live request\n\n" + R.DELIMITER
                                             + "\n\n" + SUMMARY + "\n\n" + END, "_compressed_summary": True}] + chat(8),
        state={"compressionCount": 1})
    add("summary-h6-window-after-summary", [SYS, a("x"), u(SUMMARY + "\n\n" + END)] + chat(2, 3000),
        state={"compressionCount": 1}, settings={"protectLastN": 3})
    for k, stand_in in enumerate(R.CONF_HISTORICAL):
        add(f"summary-historical-{k}", [SYS, a("x"), u(stand_in + "\n" + BODY + "\n\n" + END)] + chat(8),
            state={"compressionCount": 1})
    add("summary-legacy", [SYS, u("[CONTEXT SUMMARY]: " + BODY)] + chat(8))
    # Whitespace after the end marker: stripped before the marker is looked for.
    add("summary-end-marker-trailing-blank", [SYS, a("x"), u(" \n" + SUMMARY + "\n\n" + END + "   \n\n\t\r\n")] + chat(8),
        state={"compressionCount": 1})
    add("summary-h5-blank-own-text", [SYS, u(SUMMARY + "\n\n" + END + "\n\n \u3000\x1c\n", _compressed_summary=True)]
        + chat(8), state={"compressionCount": 1})
    add("summary-merged-assistant-padded", [SYS, u("ask"), a(R.HEADER + "\r\n own  \n\n" + R.DELIMITER + "\n\n\n" + SUMMARY
                                                             + "\n\n" + END + " \n\n", _compressed_summary=True)] + chat(8),
        state={"compressionCount": 1})
    add("summary-end-marker-not-last", [SYS, a("x"), u(SUMMARY + "\n\n" + END + "\u200b\n")] + chat(8),
        state={"compressionCount": 1})
    add("summary-state-cleared", [SYS] + chat(10), state={"previousSummary": "## Goal\nfrom another session"})
    # §11 answers.
    add("answer-think-only", [SYS] + chat(10), stub={"text": "<think>nothing else</think>"})
    add("answer-snapshot-replaced", [SYS] + chat(10), stub={"text": "## Historical Task Snapshot\nwrong\n\n## Goal\ng"})
    add("answer-end-marker-inside", [SYS] + chat(10), stub={"text": "## Goal\nbefore\n" + END + "\nafter"})
    # §12 failures.
    for name, stub in (("auth", {"error": "status", "message": "401 bad key"}),
                       ("network", {"error": "connection", "message": "peer closed connection"}),
                       ("timeout", {"error": "other", "message": "Read timed out"}),
                       ("generic", {"error": "other", "message": "HTTP 502 bad gateway"}),
                       ("long-error", {"error": "other", "message": "e" * 400}),
                       ("empty-error", {"error": "other", "message": "   "}),
                       ("blank", {"text": " \n "}),
                       ("no-provider", {"error": "other", "message": "No LLM provider configured"})):
        add("fail-" + name, [SYS] + chat(10), stub=stub)
    add("fail-generic-abort-setting", [SYS] + chat(10), stub={"error": "other", "message": "HTTP 500"},
        settings={"abortOnSummaryFailure": True})
    add("fallback-long", [SYS] + [m for i in range(12) for m in (u("ask %d " % i + "w " * 800), a("did /src/f%d.rs " % i + "v " * 800))],
        stub={"error": "other", "message": "boom"})
    add("fallback-previous-note", [SYS] + chat(10), stub={"error": "other", "message": "boom"},
        state={"previousSummary": "x"})
    # §13 assembly: roles, merge (H5), no tail (H3), sanitation, media.
    add("merge-user-h5", [SYS, u("u" * 300), a("a" * 3000), a("b" * 1500), u("c" * 3000), u("d" * 1500), u("e" * 3000),
                          u("f" * 300), u("g"), u("h" * 300), a("i" * 300), u("j" * 300), a("k" * 1500)],
        settings={"protectFirstN": 2, "protectLastN": 3})
    add("merge-assistant", [SYS, u("a"), a("b"), u("q")] + [a("x" * 900), u("y" * 900)] * 4 + [a("z")],
        settings={"protectFirstN": 3})
    add("h2-parallel-fanout", [u("do it"), a("", tool_calls=[call(f"c{i}") for i in range(7)])]
        + [tool(f"c{i}", f"out {i}") for i in range(7)])
    add("h2-parallel-fanout-prunes", [SYS, u("do it"), a("", tool_calls=[call(f"c{i}") for i in range(7)])]
        + [tool(f"c{i}", "same " * 100) for i in range(7)])
    fan = [a("", tool_calls=[call(f"c{i}") for i in range(5)])] + [tool(f"c{i}", f"out {i} " + "o" * 1000) for i in range(5)]
    add("h3-no-tail-assistant-head", [SYS, u("a"), a("b")] + fan, settings={"protectFirstN": 2})
    add("h3-no-tail-system-head", [SYS] + fan, settings={"protectFirstN": 0})
    add("h1-null-role", [SYS] + chat(2) + [{"role": None, "content": "who"}] + chat(8))
    add("h1-null-text", [SYS] + chat(2) + [u([{"type": "text", "text": None}])] + chat(8))
    add("h1-number-text", [SYS] + chat(2) + [u([{"type": "text", "text": 5}])] + chat(8))
    add("h1-null-function", [SYS] + chat(2) + [a("", tool_calls=[{"id": "c9", "type": "function", "function": None}]),
                                               tool("c9", "r")] + chat(8))
    add("h1-null-arguments", [SYS] + chat(2) + [a("", tool_calls=[{"id": "c9", "type": "function",
                                                                   "function": {"name": "x", "arguments": None}}]),
                                                tool("c9", "r")] + chat(8))
    add("sanitize-orphans", [SYS] + chat(4) + [tool("ghost", "orphan"), a("", tool_calls=[call("c1"), call("c2")]), tool("c1", "r")]
        + chat(4))
    img = {"type": "image_url", "image_url": {"url": "https://i.example/x.png"}}
    add("media-historical", [SYS, u([{"type": "text", "text": "see"}, img])] + chat(6)
        + [u([{"type": "text", "text": "again"}, img]), a("seen")] + chat(2))
    add("system-note-present", [{"role": "system", "content": "sys\n\n" + R.CONF_TEXTS["sysnote"]}] + chat(10))
    add("system-note-padded-twice", [{"role": "system", "content": "sys \t\n" + R.CONF_TEXTS["sysnote"] + "\r\n"
                                       + R.CONF_TEXTS["sysnote"] + "  \n\n"}] + chat(10))
    add("system-note-across-parts", [{"role": "system", "content": [{"type": "text", "text": R.CONF_TEXTS["sysnote"][:9]},
                                                                     {"type": "text", "text": R.CONF_TEXTS["sysnote"][9:]}]}]
        + chat(10))
    # hermes looks for its whole note: its opening alone gets the note.
    add("system-note-hermes-opening", [{"role": "system", "content": "sys\n\n[Note: Some earlier conversation turns "
                                                                        "have been compacted\x85"}] + chat(10))
    add("system-list", [{"role": "system", "content": [{"type": "text", "text": "sys"}]}] + chat(10))
    add("system-null", [{"role": "system", "content": None}] + chat(10))
    # §10 request pieces.
    add("focus-topic", [SYS] + chat(10), focusTopic="the {focus} parser")
    add("memory-context", [SYS] + chat(10), memoryContext="  <mem> & \"quotes\" é  ")
    add("memory-long", [SYS] + chat(10), memoryContext="m" * 7000)
    add("today-null", [SYS] + chat(10), today=None)
    add("previous-summary-update", [SYS] + chat(10), state={"previousSummary": "## Goal\nold", "compressionCount": 2})
    return cs
