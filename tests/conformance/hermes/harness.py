"""Writes the hermes conformance goldens (run through regen.sh; see README.md).

For every case of the corpus (corpus.py and edges.py: seeded generators, cases.py:
hand-written) it runs the real `ContextCompressor.compress()` of hermes-agent 0.19.0 twice
through instrument.py: as shipped, and as the *patched reference* that applies the divergences
H1–H9 of docs/hermes.md. The golden holds the patched values (what compactd must answer),
the divergences applied, and which fields hermes itself answers differently (or the
exception it raises). Texts: reference.py (H12).

    python harness.py [--check] [--only NAME]
"""

import copy
import json
import logging
import os
import sys
from datetime import datetime

logging.disable(logging.CRITICAL)

import reference as R
import instrument as I
from reference import CC

import corpus
import cases
import edges
import planted

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.environ.get("HERMES_GOLDENS_OUT") or os.path.join(HERE, "goldens.jsonl")

SERIALIZED = "⟦serialized⟧"

DEFAULT_SETTINGS = {"thresholdPercent": 0.50, "targetRatio": 0.20, "protectFirstN": 3,
                    "protectLastN": 20, "maxTokens": None, "abortOnSummaryFailure": False}


def normalize_case(case):
    case = dict(case)
    case["settings"] = {**DEFAULT_SETTINGS, **case.get("settings", {})}
    case["state"] = {"compressionCount": 0, "previousSummary": None, **case.get("state", {})}
    case.setdefault("focusTopic", None)
    case.setdefault("memoryContext", "")
    case.setdefault("currentTokens", None)
    case.setdefault("today", "2026-01-15")
    case.setdefault("stub", {"text": corpus.DEFAULT_ANSWER})
    case.setdefault("tags", [])
    case.setdefault("redact", False)
    return case


def rough(messages):
    return R.estimate_messages_tokens_rough(messages)


def plain(value):
    return json.loads(json.dumps(value, ensure_ascii=False))


def run(case, patch):
    R.redaction(case["redact"])
    run_ = I.start(patch)
    msgs = copy.deepcopy(case["messages"])
    if patch:
        msgs = I.nullsafe(msgs)
    s = case["settings"]
    c = CC.ContextCompressor(
        model=R.MODEL, threshold_percent=s["thresholdPercent"], protect_first_n=s["protectFirstN"],
        protect_last_n=s["protectLastN"], summary_target_ratio=s["targetRatio"], quiet_mode=True,
        config_context_length=case["contextLength"],
        abort_on_summary_failure=s["abortOnSummaryFailure"], max_tokens=s["maxTokens"])
    c.compression_count = case["state"]["compressionCount"]
    c._previous_summary = case["state"]["previousSummary"]
    run_.stub = case["stub"]
    today = case["today"]
    if today:
        y, m, d = (int(x) for x in today.split("-"))
        R.hermes_time.now = lambda: datetime(y, m, d, 12, 0)
    else:
        R.hermes_time.now = R._raise_clock
    out, exc = None, None
    try:
        out = c.compress(msgs, focus_topic=case["focusTopic"], memory_context=case["memoryContext"])
    except Exception as e:  # noqa: BLE001 - hermes's crashes are data here
        exc = e
    return run_, c, msgs, out, exc


def threshold(case, c, tokens_before):
    measured = case["currentTokens"] or tokens_before
    return {"thresholdPercent": c.threshold_percent, "thresholdTokens": c.threshold_tokens,
            "tailTokenBudget": c.tail_token_budget, "maxSummaryTokens": c.max_summary_tokens,
            "shouldCompress": measured >= c.threshold_tokens}


def request_of(case, run_):
    """The request with the placeholder texts, after checking hermes's words reproduce it."""
    if run_.prompt is None:
        return None
    mem = R.memory_json(run_.memory)
    args = (run_.budget, run_.prev_at_call, run_.focus, mem, case["today"])
    assert R.render_request(R.HT, run_.serialized, *args) == run_.prompt, f"{case['name']}: request does not round-trip"
    # The serialized turns (a field of their own) stand in the request as one token.
    content = R.render_request(R.CONF_TEXTS, SERIALIZED, *args)
    return {"kind": "summary", "messages": [{"role": "user", "content": content}],
            "summaryBudget": run_.budget, "maxTokens": None}


def boundaries(run_):
    turns_start = None
    if run_.turns is not None:
        if run_.extra and run_.patch:
            turns_start = run_.cs
        elif run_.found is not None:
            turns_start = max(run_.cs, run_.found + 1)
        else:
            turns_start = run_.cs
    return {"headSize": run_.head, "compressStart": run_.cs, "compressEnd": run_.ce,
            "previousSummaryIndex": run_.found, "turnsStart": turns_start,
            "turnsCount": len(run_.turns) if run_.turns is not None else None,
            "prunedIndexes": run_.pruned_idx}


def not_compressed(case, reason, before, thr, run_, extra=None):
    e = {"compressed": False, "reason": reason, "messages": case["messages"], "tokensBefore": before,
         "threshold": thr, "state": case["state"], "boundaries": boundaries(run_)}
    e.update(extra or {})
    return e


def h5_rewrite(msg, summary, source_content):
    """compactd's merge into a user message: summary first, no PRIOR CONTEXT header (H5);
    null or non-string content counts as empty, list content gets a leading text part."""
    suffix = "\n\n" + R.DELIMITER + "\n\n" + summary + "\n\n" + R.END_MARKER
    content = msg.get("content")
    lead = summary + "\n\n" + R.END_MARKER
    new = dict(msg)
    if isinstance(content, str):
        assert content.startswith(R.HEADER + "\n") and content.endswith(suffix)
        old = content[len(R.HEADER) + 1: len(content) - len(suffix)]
        if not isinstance(source_content, str):
            old = ""
        new["content"] = lead + ("\n\n" + old if old else "")
    elif isinstance(content, list):
        assert content[0] == {"type": "text", "text": R.HEADER + "\n"} and content[-1] == {"type": "text", "text": suffix}
        new["content"] = [{"type": "text", "text": lead}] + content[1:-1]
    else:
        raise AssertionError("merged content")
    return new


def outcome(case, run_, c, msgs, out, exc):
    n = len(case["messages"])
    before = rough(case["messages"])
    thr = threshold(case, c, before)
    if isinstance(exc, I.H9Signal):
        return not_compressed(case, "nothing-to-compress", before, thr, run_)
    if isinstance(exc, I.H2Signal):
        if not run_.pruned_idx:
            return not_compressed(case, "nothing-to-compress", before, thr, run_)
        messages = plain(run_.pruned)
        for m in messages:
            m.pop("_db_persisted", None)
        after = rough(messages)
        return {"compressed": True, "summarizer": "prune-only", "messages": messages, "summary": None,
                "summaryIndex": None, "summaryRole": None, "summaryMerged": False,
                "boundaries": boundaries(run_), "sources": list(range(n)), "tokensBefore": before,
                "tokensAfter": after, "madeProgress": R._compression_made_progress(n, n, before, after),
                "threshold": thr, "requests": [], "state": case["state"],
                "fallback": {"used": False, "droppedCount": 0, "error": None}}
    if exc is not None:
        return {"exception": f"{type(exc).__name__}: {exc}"[:300]}
    if run_.cs is None:
        return not_compressed(case, "too-few-messages", before, thr, run_)
    if run_.ce is not None and run_.cs >= run_.ce:
        return not_compressed(case, "nothing-to-compress", before, thr, run_,
                              {"hermesMessages": "pruned" if run_.pruned_idx else "input"})
    request = request_of(case, run_)
    if c._last_compress_aborted:
        e = not_compressed(case, "summary-failed", before, thr, run_,
                           {"error": c._last_summary_error, "requests": [request], "serialized": run_.serialized})
        if run_.patch:
            if run_.pruned_idx:
                run_.div.add("H8")
        else:
            e["messages"] = plain(out)
        return e
    messages = plain(out)
    sources = list(run_.sources)
    summary = run_.fallback_summary if c._last_summary_fallback_used else run_.summary
    standalone = summary + "\n\n" + R.END_MARKER
    index, merged = None, False
    for k, m in enumerate(messages):
        if m.get("_compressed_summary") is True and (m.get("content") == standalone):
            index = k
            break
    else:
        for k, m in enumerate(messages):
            if sources[k] == run_.ce and m.get("_compressed_summary") is True:
                index, merged = k, True
    if run_.patch and index is None and run_.ce == n:
        run_.div.add("H3")
        messages.append({"role": "user", "content": standalone, "_compressed_summary": True})
        sources.append(None)
        index = len(messages) - 1
    if run_.patch and merged and messages[index].get("role", "user") == "user":
        run_.div.add("H5")
        messages[index] = h5_rewrite(messages[index], summary, run_.pruned[run_.ce].get("content"))
    after = rough(messages)
    return {
        "compressed": True,
        "summarizer": "fallback" if c._last_summary_fallback_used else "llm",
        "messages": messages,
        "summary": summary,
        "summaryIndex": index,
        "summaryRole": messages[index].get("role") if index is not None else None,
        "summaryMerged": merged,
        "boundaries": boundaries(run_),
        "sources": sources,
        "tokensBefore": before,
        "tokensAfter": after,
        "madeProgress": R._compression_made_progress(n, len(messages), before, after),
        "threshold": thr,
        "requests": [request] if request else [],
        "serialized": run_.serialized,
        "state": {"compressionCount": c.compression_count, "previousSummary": c._previous_summary},
        "fallback": {"used": c._last_summary_fallback_used, "droppedCount": c._last_summary_dropped_count,
                     "error": c._last_summary_error},
    }


def answer_of(case, c, run_):
    """What compactd's pipeline hands `Pending::finish` for this stub behaviour."""
    if run_.prompt is None:
        return None
    stub = case["stub"]
    if "text" in stub:
        return {"text": stub["text"]}
    abort = bool(c._last_summary_auth_failure or c._last_summary_network_failure)
    return {"failed": {"abort": abort, "error": c._last_summary_error}}


def golden(case):
    case = normalize_case(case)
    rp = run(case, True)
    expected = plain(outcome(case, *rp))
    rh = run(case, False)
    hermes = plain(outcome(case, *rh))
    divergences = set(rp[0].div)
    if "exception" in hermes and "exception" not in expected:
        if hermes["exception"].startswith(("TypeError", "AttributeError")):
            divergences.add("H1")
        if hermes["exception"].startswith("IndexError"):
            divergences.add("H2")
    if "exception" in expected:
        raise AssertionError(f"{case['name']}: the patched reference raised {expected['exception']}")
    if hermes.get("reason") == "nothing-to-compress" and hermes.get("hermesMessages") == "pruned":
        divergences.add("nothing-to-compress")
    expected.pop("hermesMessages", None)
    hermes.pop("hermesMessages", None)
    divergences |= set(t for t in case["tags"] if t == "H11")
    differs = sorted(k for k in set(expected) | set(hermes) if expected.get(k) != hermes.get(k))
    record = {
        "name": case["name"],
        "tags": case["tags"],
        **({"redact": True} if case["redact"] else {}),
        "divergences": sorted(divergences),
        "hermes": {"exception": hermes["exception"]} if "exception" in hermes else {"differs": differs},
        "input": {k: case[k] for k in ("messages", "contextLength", "settings", "state", "focusTopic",
                                       "memoryContext", "currentTokens", "today")},
        "stub": case["stub"],
        "answer": answer_of(case, rp[1], rp[0]),
        "expected": expected,
    }
    compact_messages(record)
    if differs and not divergences:
        raise AssertionError(f"{case['name']}: patched and unpatched differ without a divergence: {differs}")
    return record


def compact_messages(record):
    """Output messages equal to an input message are written `{"$input": index}`."""
    e, inputs = record["expected"], record["input"]["messages"]
    if e["messages"] == inputs:
        e["messages"] = "$input"
        return
    for k, m in enumerate(e["messages"]):
        src = e["sources"][k] if k < len(e.get("sources") or []) else None
        if src is not None and m == inputs[src] and list(m) == list(inputs[src]):
            e["messages"][k] = {"$input": src}


def main(argv):
    I.install()
    only = argv[argv.index("--only") + 1] if "--only" in argv else None
    all_cases = cases.cases() + corpus.generate() + edges.generate() + planted.generate()
    names = [c["name"] for c in all_cases]
    assert len(names) == len(set(names)), "duplicate case names"
    lines = [json.dumps({"kind": "header", "reference": "hermes-agent==0.19.0", "model": R.MODEL,
                         "provider": None, "texts": R.CONF_TEXTS,
                         "historicalPrefixes": list(R.CONF_HISTORICAL)}, ensure_ascii=False)]
    stats = {}
    for case in all_cases:
        if only and case["name"] != only:
            continue
        try:
            g = golden(case)
        except AssertionError as e:
            if os.environ.get("HERMES_EXPLORE"):
                print("skipped:", e)
                continue
            raise
        line = json.dumps(g, ensure_ascii=False)
        leak = R.no_secrets_in(line)
        assert leak is None, f"{case['name']}: hermes's text in the golden ({leak})"
        lines.append(line)
        e = g["expected"]
        key = e.get("summarizer") or e.get("reason")
        stats[key] = stats.get(key, 0) + 1
        for d in g["divergences"]:
            stats[d] = stats.get(d, 0) + 1
    if only:
        print(lines[-1])
        return
    data = "\n".join(lines) + "\n"
    if "--check" in argv:
        with open(OUT, encoding="utf-8") as f:
            assert f.read() == data, "goldens.jsonl is stale: run regen.sh"
    else:
        with open(OUT, "w", encoding="utf-8") as f:
            f.write(data)
    print(f"{len(lines) - 1} cases, {len(data.encode()) / 1e6:.1f} MB;",
          ", ".join(f"{k}: {v}" for k, v in sorted(stats.items())))


if __name__ == "__main__":
    main(sys.argv[1:])
