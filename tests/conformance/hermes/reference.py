"""The hermes reference, loaded and instrumented for the conformance harness.

Loads the real `agent.context_compressor` of hermes-agent 0.19.0 (from the venv that
`scripts/hermes-venv` builds) with no network and no secrets redaction, and:

* derives hermes's fixed texts (H12) **at run time**, in compactd's format (one template per
  text with `{slot}`s, as in `prompts/hermes/`), by running hermes's builders on sentinel
  values. Nothing of hermes's wording is written into the repository: the goldens hold the
  placeholder texts of `CONF_TEXTS` instead, and every request/fallback is re-rendered with
  them after checking that the same rendering with hermes's own texts reproduces hermes's
  output byte for byte;
* replaces the texts hermes keeps in module constants (the handoff prefix, the historical
  prefixes) and in `compress()`'s code (the system note) by the placeholder texts, so that
  everything downstream of them (lengths, cuts, detection, token counts) is hermes's own
  computation on the same texts compactd is given;
* wraps hermes's helpers to record what compactd reports besides the list (boundaries,
  pruned indexes, turns, sources) and to apply the divergences H2–H9 of docs/hermes.md as a
  *patched reference* (switched by `Run.patch`), like D1 in the pi suite.
"""

import json
import os
import re
import sys
import tempfile
import types
from datetime import datetime

# Before hermes is imported: its redactor reads the switch at import (agent/redact.py 69).
os.environ["HERMES_HOME"] = tempfile.mkdtemp(prefix="hermes-conformance-")
os.environ["HERMES_REDACT_SECRETS"] = "false"
os.environ["HERMES_TIMEZONE"] = "UTC"
for _k in list(os.environ):
    if _k.endswith("_API_KEY") or _k in ("OPENAI_BASE_URL", "OPENROUTER_API_KEY"):
        del os.environ[_k]

import hermes_time  # noqa: E402
import agent.context_compressor as CC  # noqa: E402
import agent.redact as REDACT  # noqa: E402
from agent.model_metadata import estimate_messages_tokens_rough  # noqa: E402
from agent.turn_context import _compression_made_progress  # noqa: E402
from agent.context_engine import sanitize_memory_context  # noqa: E402

MODEL = "conformance-model"
OPENING_MARKER = "[CONTEXT COMPACTION — REFERENCE ONLY]"
END_MARKER = CC._SUMMARY_END_MARKER
DELIMITER = CC._MERGED_SUMMARY_DELIMITER
HEADER = CC._MERGED_PRIOR_CONTEXT_HEADER
HERMES_PREFIX = CC.SUMMARY_PREFIX
HERMES_HISTORICAL = tuple(CC._HISTORICAL_SUMMARY_PREFIXES)

SLOTS = {
    "prefix": [], "preamble": [], "temporal": ["date", "date"], "template": ["budget", "temporal"],
    "first": ["preamble", "turns", "memory", "template"],
    "update": ["preamble", "previous", "turns", "memory", "template"],
    "focus": ["focus", "focus"], "memory": ["json"], "sysnote": [],
    "fallback": ["task", "previous_note", "completed", "blockers", "files", "dropped", "count", "reason"],
    "fallback_note": [],
}


def fill(template, values):
    """compactd's `texts::fill`: one left-to-right pass, unknown `{x}` kept."""
    return re.sub(r"\{([a-z_]+)\}", lambda m: values.get(m[1], m[0]), template)


def pieces(template, slots):
    """A template split at its slots, in order: len(slots) + 1 pieces."""
    out, rest = [], template
    for s in slots:
        i = rest.index("{" + s + "}")
        out.append(rest[:i])
        rest = rest[i + len(s) + 2:]
    return out + [rest]


def join_pieces(ps, slots):
    return "".join(p + ("{" + s + "}" if k < len(slots) else "") for k, (p, s) in
                   enumerate(zip(ps, slots + [None])))


# ---------------------------------------------------------------------------------------
# Placeholder texts: what both sides use in conformance. A placeholder has the same length
# (in code points) as hermes's piece where the text lands in the compacted list (prefix,
# system note, fallback), so length rules (E, R, the 8,000 cut) behave as with hermes's
# words; the request texts only need to be recognisable.


def _pad(tag, length):
    tag = "⟦" + tag + "⟧"
    return tag + "·" * max(0, length - len(tag))


def _placeholder(name, hermes_template, padded):
    slots = SLOTS[name]
    ps = pieces(hermes_template, slots)
    out = []
    for k, p in enumerate(ps):
        if p == "":
            out.append("")
            continue
        # Keep the piece's leading/trailing newlines: they are where the text sits, and
        # keeping them keeps repr/escape lengths close too.
        lead = p[: len(p) - len(p.lstrip("\n"))]
        trail = p[len(p.rstrip("\n")):] if p.strip("\n") else ""
        core = p[len(lead): len(p) - len(trail)] if p.strip("\n") else ""
        tag = f"V-{name}" + (f".{k}" if len(ps) > 1 else "")
        body = _pad(tag, len(core)) if padded else "⟦" + tag + "⟧"
        out.append(lead + (body if core else "") + trail)
    return join_pieces(out, slots)


# ---------------------------------------------------------------------------------------
# Deriving hermes's texts from its builders.

_CAPTURED = []


def _capture_llm(**kwargs):
    _CAPTURED.append(kwargs["messages"][0]["content"])
    raise RuntimeError("sentinel run")


def _sentinel_prompt(previous, focus, memory, date):
    c = CC.ContextCompressor(model=MODEL, quiet_mode=True, config_context_length=200000)
    c._previous_summary = previous
    c._serialize_for_summary = lambda turns: "QQTURNSQQ"
    c._compute_summary_budget = lambda turns: 424242
    saved_now = hermes_time.now
    saved_llm = CC.call_llm
    hermes_time.now = (lambda: datetime(2099, 12, 31, 12, 0)) if date else _raise_clock
    CC.call_llm = _capture_llm
    try:
        _CAPTURED.clear()
        c._generate_summary([], focus_topic=focus, memory_context=memory)
        return _CAPTURED[0]
    finally:
        hermes_time.now = saved_now
        CC.call_llm = saved_llm


def _raise_clock():
    raise RuntimeError("no clock")


def derive_request_texts():
    first = _sentinel_prompt(None, "QQFOCUSQQ", "QQMEMQQ", True)
    first_nf = _sentinel_prompt(None, None, "QQMEMQQ", True)
    first_nm = _sentinel_prompt(None, None, "", True)
    first_nd = _sentinel_prompt(None, None, "", False)
    update_nm = _sentinel_prompt("QQPREVQQ", None, "", True)
    t = {}
    assert first.startswith(first_nf) and first[len(first_nf):].startswith("\n\n")
    t["focus"] = first[len(first_nf) + 2:].replace("QQFOCUSQQ", "{focus}")
    cut = first_nm.index("QQTURNSQQ") + len("QQTURNSQQ")
    assert first_nf[:cut] == first_nm[:cut]
    m = first_nf[cut: len(first_nf) - (len(first_nm) - cut)]
    assert first_nf == first_nm[:cut] + m + first_nm[cut:] and m.startswith("\n\n")
    t["memory"] = m[2:].replace('"QQMEMQQ"', "{json}")
    # The temporal rule: the paragraph holding the date, "\n" + X + "\n" in the template.
    paras = first_nm.split("\n\n")
    dated = [p for p in paras if "2099-12-31" in p]
    assert len(dated) == 1 and dated[0].count("2099-12-31") == 2
    x = dated[0]
    assert first_nm.replace("\n" + x + "\n", "", 1) == first_nd
    t["temporal"] = x.replace("2099-12-31", "{date}")
    start = first_nm.index(CC.HISTORICAL_TASK_HEADING, cut)
    t["template"] = first_nm[start:].replace("424242", "{budget}", 1).replace(
        "\n" + x + "\n", "{temporal}", 1)
    # The preamble: what the first and the update prompt share before their own words.
    k = 0
    while first_nm[k] == update_nm[k]:
        k += 1
    common = first_nm[:k]
    assert common.endswith("\n\n") and "\n\n" not in common[:-2]
    t["preamble"] = common[:-2]
    t["first"] = ("{preamble}" + first_nm[len(common) - 2: cut - len("QQTURNSQQ")] + "{turns}{memory}"
                  + first_nm[cut:start] + "{template}")
    ui = update_nm.index("QQTURNSQQ")
    ustart = update_nm.index(CC.HISTORICAL_TASK_HEADING, ui)
    t["update"] = ("{preamble}" + update_nm[len(common) - 2: ui].replace("QQPREVQQ", "{previous}", 1)
                   + "{turns}{memory}" + update_nm[ui + len("QQTURNSQQ"): ustart] + "{template}")
    for name in ("focus", "memory", "temporal", "template", "first", "update"):
        pieces(t[name], SLOTS[name])  # raises when a slot is missing
    # Round trip: our rendering with hermes's words is hermes's prompt.
    for prompt, prev, focus, mem, date in ((first, None, "QQFOCUSQQ", "QQMEMQQ", "2099-12-31"),
                                           (first_nd, None, None, "", None),
                                           (update_nm, "QQPREVQQ", None, "", "2099-12-31")):
        got = render_request(t, "QQTURNSQQ", 424242, prev, focus, memory_json(mem), date)
        assert got == prompt, "request texts do not round-trip"
    return t


def memory_json(memory_context):
    s = sanitize_memory_context(memory_context or "")
    if not s:
        return None
    return (json.dumps(s, ensure_ascii=False).replace("&", "\\u0026")
            .replace("<", "\\u003c").replace(">", "\\u003e"))


def render_request(t, turns, budget, previous, focus, mem_json, date):
    """docs/hermes.md §10 with texts `t` (compactd's `prompt::build`)."""
    temporal = "\n" + fill(t["temporal"], {"date": date}) + "\n" if date else ""
    template = fill(t["template"], {"budget": str(budget), "temporal": temporal})
    memory = "\n\n" + fill(t["memory"], {"json": mem_json}) if mem_json else ""
    values = {"preamble": t["preamble"], "turns": turns, "memory": memory, "template": template,
              "previous": previous or ""}
    prompt = fill(t["update"] if previous else t["first"], values)
    if focus:
        prompt += "\n\n" + fill(t["focus"], {"focus": focus})
    return prompt


def _fallback_slot_values(turns_kind):
    """The slot values the sentinel turns give (docs/hermes.md §12 data formats)."""
    return {
        "task": "User asked: 'QQASKQQ'",
        "completed": "1. QQDONEQQ\n2. " + CC._summarize_tool_result("unknown", "", "QQTOOLQQ failed /qqdir/qq.txt"),
        "blockers": "- QQTOOLQQ failed /qqdir/qq.txt",
        "files": "- /qqdir/qq.txt",
        "dropped": "- USER: QQASKQQ\n- ASSISTANT: QQDONEQQ\n- TOOL: QQTOOLQQ failed /qqdir/qq.txt",
        "count": "3",
        "reason": " Summary failure reason: QQREASONQQ.",
    }


_BODIES = []
_REAL_REDACT = CC.redact_sensitive_text


def redaction(on):
    """Switches hermes's redactor per case (it reads the module flag at each call)."""
    REDACT._REDACT_ENABLED = bool(on)


def _capture_redact(text, *a, **k):
    # The builder's last call redacts the whole body: record what it returns.
    out = _REAL_REDACT(text, *a, **k)
    _BODIES.append(out)
    return out


def fallback_body(compressor, turns, reason):
    """Run hermes's fallback builder; returns (its summary, the body before the prefix)."""
    saved = CC.redact_sensitive_text
    assert saved is _REAL_REDACT
    CC.redact_sensitive_text = _capture_redact
    try:
        _BODIES.clear()
        summary = ORIG["_build_static_fallback_summary"](compressor, turns, reason=reason)
        return summary, _BODIES[-1]
    finally:
        CC.redact_sensitive_text = saved


def derive_fallback_texts():
    turns = [{"role": "user", "content": "QQASKQQ"}, {"role": "assistant", "content": "QQDONEQQ"},
             {"role": "tool", "tool_call_id": "c1", "content": "QQTOOLQQ failed /qqdir/qq.txt"}]
    c = CC.ContextCompressor(model=MODEL, quiet_mode=True, config_context_length=200000)
    _, body_a = fallback_body(c, turns, "QQREASONQQ")
    c._previous_summary = "QQPREVQQ"
    _, body_b = fallback_body(c, turns, "QQREASONQQ")
    consts = [k for k in ORIG["_build_static_fallback_summary"].__code__.co_consts
              if isinstance(k, str) and len(k) > 20 and k in body_b and k not in body_a]
    assert len(consts) == 1 and consts[0].startswith("\n\n"), consts
    note = consts[0]
    values = _fallback_slot_values(None)
    values["previous_note"] = note
    tmpl, pos = "", 0
    for slot in SLOTS["fallback"]:
        i = body_b.index(values[slot], pos)
        tmpl += body_b[pos:i] + "{" + slot + "}"
        pos = i + len(values[slot])
    tmpl += body_b[pos:]
    assert fill(tmpl, values) == body_b
    values["previous_note"] = ""
    assert fill(tmpl, values) == body_a
    return {"fallback": tmpl, "fallback_note": note[2:]}


def parse_fallback(body, t):
    """The slot values of a fallback body written with texts `t` (None if it does not parse)."""
    ps = pieces(t["fallback"], SLOTS["fallback"])
    if not body.startswith(ps[0]):
        return None
    values, pos = {}, len(ps[0])
    for k, slot in enumerate(SLOTS["fallback"]):
        nxt = ps[k + 1]
        if slot == "previous_note":
            note = "\n\n" + t["fallback_note"]
            if body.startswith(note, pos):
                values[slot] = note
                pos += len(note)
            else:
                values[slot] = ""
            if not body.startswith(nxt, pos):
                return None
            pos += len(nxt)
            continue
        i = body.find(nxt, pos) if nxt else len(body)
        if i < 0:
            return None
        values[slot] = body[pos:i]
        pos = i + len(nxt)
    if pos != len(body) or fill(t["fallback"], values) != body:
        return None
    return values


def fallback_cut(summary):
    limit = CC._FALLBACK_SUMMARY_MAX_CHARS
    if len(summary) > limit:
        summary = summary[: limit - 42].rstrip() + "\n...[fallback summary truncated]"
    return summary


# ---------------------------------------------------------------------------------------
# The instrumented reference.

ORIG = {}
for _name in ("_protect_head_size", "_prune_old_tool_results", "_find_tail_cut_by_tokens",
              "_generate_summary", "_build_static_fallback_summary", "_sanitize_tool_pairs",
              "_compute_summary_budget", "_serialize_for_summary"):
    ORIG[_name] = getattr(CC.ContextCompressor, _name)
ORIG["_find_latest_context_summary"] = CC.ContextCompressor.__dict__["_find_latest_context_summary"].__func__
ORIG["_strip_summary_prefix"] = CC.ContextCompressor.__dict__["_strip_summary_prefix"].__func__
ORIG["_fresh_compaction_message_copy"] = CC._fresh_compaction_message_copy
ORIG["compress_code"] = CC.ContextCompressor.compress.__code__

HT = {}  # hermes's texts in compactd's format (run time only, never written)
HT.update(derive_request_texts())
HT.update(derive_fallback_texts())
HT["prefix"] = HERMES_PREFIX
_sysnotes = [k for k in ORIG["compress_code"].co_consts if isinstance(k, str) and k.startswith("[Note: ")]
assert len(_sysnotes) == 1
HT["sysnote"] = _sysnotes[0]

CONF_TEXTS = {
    "prefix": OPENING_MARKER + " " + _pad("V-prefix", len(HERMES_PREFIX) - len(OPENING_MARKER) - 1),
    "sysnote": _pad("V-sysnote", len(HT["sysnote"])),
}
for _n in ("preamble", "temporal", "template", "first", "update", "focus", "memory"):
    CONF_TEXTS[_n] = _placeholder(_n, HT[_n], False)
CONF_TEXTS["fallback"] = _placeholder("fallback", HT["fallback"], True)
CONF_TEXTS["fallback_note"] = _pad("V-fallback-note", len(HT["fallback_note"]))


def _historical_closing():
    """The closing phrase the historical prefixes share (an interop marker, §8)."""
    a = HERMES_HISTORICAL
    k = 0
    while all(len(p) > k and p[-1 - k] == a[0][-1 - k] for p in a):
        k += 1
    tail = a[0][len(a[0]) - k:]
    return tail[tail.index("—") - 1:] if "—" in tail else tail


CLOSING = _historical_closing()
CONF_HISTORICAL = tuple(
    OPENING_MARKER + " " + _pad(f"V-historical.{k}", len(p) - len(OPENING_MARKER) - 1 - len(CLOSING)) + CLOSING
    for k, p in enumerate(HERMES_HISTORICAL))

# The texts swapped in hermes itself.
CC.SUMMARY_PREFIX = CONF_TEXTS["prefix"]
CC._HISTORICAL_SUMMARY_PREFIXES = CONF_HISTORICAL
CC.ContextCompressor.compress.__code__ = ORIG["compress_code"].replace(co_consts=tuple(
    CONF_TEXTS["sysnote"] if k == HT["sysnote"] else k for k in ORIG["compress_code"].co_consts))
assert CONF_TEXTS["sysnote"] in CC.ContextCompressor.compress.__code__.co_consts


def no_secrets_in(text):
    """H12 guard: none of hermes's long texts (or a 60-character piece of one) in `text`."""
    for name, tmpl in list(HT.items()) + [(f"historical{k}", p) for k, p in enumerate(HERMES_HISTORICAL)]:
        for piece in re.split(r"\{[a-z_]+\}", tmpl):
            for line in piece.split("\n"):
                line = line.strip()
                if len(line) >= 60 and line in text:
                    return f"{name}: {line[:40]}"
    return None
