#!/usr/bin/env python3
"""compactd on the public canary kit (compaction-conformance-kit 0.8.0), run by bench/kit/run.

A kit round hands a compactor a list of turns and, from round 2 on, one system turn holding
what that compactor answered the round before. Here a compactor is a pi client of compactd:

* its session is a v3 pi session: one `message` entry per turn (user -> user message,
  assistant -> assistant text, tool -> a `toolResult` answering a `toolCall` added to the
  assistant message before it); leading system turns are the agent's system prompt, which pi
  neither stores in the session nor compacts;
* it POSTs the session to /v1/compact and shows the agent what pi would: the summary, then
  the kept messages (`[role] text` lines, the kit's own transcript form);
* in the next round it recognises its own answer and sends the session pi would hold: the
  compaction entry (summary, details with the pinned ledger, firstKeptEntryId) and the kept
  messages. A 409 (nothing to compact) leaves the context as it was.

Settings:
* no budget ("pi's summary budget"): reserveTokens 16384 as pi's default, keepRecentTokens in
  pi's proportion to the session (20000 of a 128000 window);
* a budget of B characters: targetTokens = (B - frame) / 4, the whole compacted context as
  the client counts it; when what it renders is still over B (its `[role] ` prefixes are not
  tokens compactd counts), the client asks again for proportionally less, at most a few times.
  It never truncates what compactd answered.

Output: the seeded session's survival per round for compactd and the kit's baselines, the
kit's budget benchmark tables, and one closing line of figures. With --floors FILE and
--check, exits 1 when a figure is below its floor.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import urllib.error
import urllib.request

from compaction_kit.benchmark import budget_benchmark_to_markdown, run_budget_benchmark
from compaction_kit.canaries import seeded_canaries
from compaction_kit.cli import COMPACTORS
from compaction_kit.compacted import CompactedContext
from compaction_kit.runner import run_conformance
from compaction_kit.session import Turn, build_seeded_session

SUMMARY_PREFIX = "[summary] "
PI_KEEP, PI_RESERVE, PI_WINDOW = 20_000, 16_384, 128_000
EPOCH_MS = 1_767_225_600_000  # fixed timestamps: the same session bytes on every run


def tokens(text: str) -> int:
    """compactd's estimate: UTF-16 units / 4, rounded up."""
    return math.ceil(len(text.encode("utf-16-le")) / 2 / 4)


def timestamp(ms: int) -> str:
    secs, milli = divmod(ms, 1000)
    import datetime

    t = datetime.datetime.fromtimestamp(secs, datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S") + f".{milli:03d}Z"


class Session:
    """A pi session being written: entries chained by parentId, with deterministic ids."""

    def __init__(self) -> None:
        self.entries: list[dict] = [
            {"type": "session", "version": 3, "id": "kit", "timestamp": timestamp(EPOCH_MS), "cwd": "/kit"}
        ]
        self.turn_of: dict[str, Turn] = {}
        self._last_assistant: dict | None = None
        self._calls = 0

    def _append(self, body: dict) -> dict:
        n = len(self.entries)
        entry = {"type": body.pop("type"), "id": f"k{n:06d}",
                 "parentId": self.entries[-1]["id"] if n > 1 else None,
                 "timestamp": timestamp(EPOCH_MS + n * 1000), **body}
        if "message" in entry:
            entry["message"]["timestamp"] = EPOCH_MS + n * 1000
        self.entries.append(entry)
        return entry

    def compaction(self, summary: str, details: dict, tokens_before: int) -> None:
        # firstKeptEntryId is the entry after it (the first kept message, appended next).
        n = len(self.entries)
        self._append({"type": "compaction", "summary": summary, "firstKeptEntryId": f"k{n + 1:06d}",
                      "tokensBefore": tokens_before, "details": details})

    def add(self, turn: Turn) -> None:
        if turn.role == "assistant":
            e = self._append({"type": "message", "message": {
                "role": "assistant", "content": [{"type": "text", "text": turn.text}],
                "api": "kit", "provider": "kit", "model": "kit", "stopReason": "stop"}})
            self._last_assistant = e
        elif turn.role == "tool":
            if self._last_assistant is None:
                self._last_assistant = self._append({"type": "message", "message": {
                    "role": "assistant", "content": [], "api": "kit", "provider": "kit",
                    "model": "kit", "stopReason": "toolUse"}})
            self._calls += 1
            call = f"call{self._calls}"
            self._last_assistant["message"]["content"].append(
                {"type": "toolCall", "id": call, "name": "tool", "arguments": {}})
            self._last_assistant["message"]["stopReason"] = "toolUse"
            e = self._append({"type": "message", "message": {
                "role": "toolResult", "toolCallId": call, "toolName": "tool",
                "content": [{"type": "text", "text": turn.text}], "isError": False}})
        else:
            text = turn.text if turn.role in ("user", "system") else f"[{turn.role}] {turn.text}"
            e = self._append({"type": "message", "message": {
                "role": "user", "content": [{"type": "text", "text": text}]}})
            self._last_assistant = None
        self.turn_of[e["id"]] = turn

    def kept_from(self, entry_id: str) -> list[Turn]:
        ids = [e["id"] for e in self.entries]
        start = ids.index(entry_id)
        return [self.turn_of[i] for i in ids[start:] if i in self.turn_of]


class Compactd:
    """The kit's compactor protocol over POST /v1/compact."""

    name = "compactd"

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")
        self.shown: str | None = None  # what the agent saw after the last round
        self.state: tuple[str | None, dict, int, list[Turn]] | None = None
        self.first_tokens = 0

    def _post(self, entries: list[dict], settings: dict) -> tuple[int, dict]:
        body = json.dumps({"entries": entries, "settings": settings}).encode()
        req = urllib.request.Request(self.url + "/v1/compact", data=body,
                                     headers={"content-type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")

    @staticmethod
    def render(summary: str | None, kept: list[Turn]) -> str:
        lines = [SUMMARY_PREFIX + summary] if summary is not None else []
        lines += [f"[{t.role}] {t.text}" for t in kept]
        return "\n".join(lines)

    def compact(self, turns: list[Turn], round_num: int = 1, budget_chars: int | None = None) -> CompactedContext:
        session = Session()
        previous = None
        if round_num > 1 and self.state and len(turns) == 1 and turns[0].text == self.shown:
            previous = self.state
            summary, details, before, kept = previous
            if summary is not None:
                session.compaction(summary, details, before)
            messages = kept
        else:
            messages = [t for i, t in enumerate(turns) if t.role != "system" or any(
                u.role != "system" for u in turns[:i])]
        for t in messages:
            session.add(t)
        context_tokens = sum(tokens(t.text) for t in messages) + (
            tokens(previous[0]) if previous and previous[0] else 0)
        if round_num == 1:
            self.first_tokens = context_tokens

        def settings(scale: float) -> dict:
            if budget_chars is None:
                keep = max(1, round(PI_KEEP * context_tokens / PI_WINDOW))
                return {"keepRecentTokens": keep, "reserveTokens": PI_RESERVE}
            frame = len(SUMMARY_PREFIX) + 1
            return {"targetTokens": max(1, int((budget_chars - frame) / 4 * scale))}

        unchanged = self.render(previous[0] if previous else None, messages)
        text, scale = unchanged, 1.0
        result = None
        for _ in range(6):
            status, result = self._post(session.entries, settings(scale))
            if status == 409:
                result = None
                break
            if status != 200:
                raise RuntimeError(f"compactd answered {status}: {str(result)[:300]}")
            kept = session.kept_from(result["firstKeptEntryId"])
            text = self.render(result["summary"], kept)
            if budget_chars is None or len(text) <= budget_chars:
                break
            scale *= budget_chars / len(text) * 0.98
        if result is None:
            text = unchanged
            self.state = previous or (None, {}, context_tokens, messages)
        else:
            self.state = (result["summary"], result.get("details") or {},
                          int(result.get("tokensBefore") or context_tokens), kept)
        self.shown = text
        return CompactedContext(text=text, compactor_name=self.name, round_num=round_num)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description="compactd on compaction-conformance-kit 0.8.0")
    ap.add_argument("url")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--floors", help="file of `name value` lines: the least each figure may be")
    ap.add_argument("--check", action="store_true", help="exit 1 when a figure is below its floor")
    a = ap.parse_args(argv)

    budgets, seeds = (0.1, 0.2, 0.3), (1, 2, 3, 4)
    canaries = seeded_canaries()
    session = build_seeded_session()
    factories = {"compactd": lambda: Compactd(a.url), **COMPACTORS}

    print("# compaction-conformance-kit 0.8.0: compactd (extractive) beside the kit's baselines\n")
    print(f"## Seeded session, no budget (compactd: pi's summary budget), {a.rounds} rounds\n")
    print("| compactor | canaries kept, round 1 .. " + str(a.rounds) + " |")
    print("|---|---|")
    figures: dict[str, float] = {}
    for name, make in factories.items():
        run = run_conformance(session, make(), rounds=a.rounds, canaries=canaries)
        kept = [sum(r.survived.values()) for r in run.rounds]
        print(f"| {name} | {' / '.join(map(str, kept))} of {len(canaries)} |")
        if name == "compactd":
            figures["seeded_r1"] = kept[0]
            figures["seeded_min"] = min(kept)
    print()

    bench = run_budget_benchmark(factories, budgets=budgets, seeds=seeds, rounds=a.rounds)
    print(budget_benchmark_to_markdown(bench).replace("# Budget benchmark", "## Budget benchmark", 1))

    def entry(name: str, b: float) -> dict:
        return next(e for e in bench["entries"] if e["compactor"] == name and e["budget_fraction"] == b)

    best = {}
    for b in budgets:
        mine = entry("compactd", b)
        tag = f"b{round(b * 100)}"
        figures[tag] = mine["randomized"]["overall_final_survival"]
        figures[f"{tag}_compliant"] = 1.0 if mine["budget_compliant"] else 0.0
        # The semantic corpora: later statements replace earlier ones in other words, and
        # look-alike entities stay apart. "fresh" is the share of conflicts whose superseded
        # value is gone from the final context (1 - stale / n), so every floor is a least.
        sem = mine["semantic"]
        figures[f"sem_{tag}_resolved"] = round(sem["resolved_rate"], 3)
        figures[f"sem_{tag}_fresh"] = round(1 - sem["conflicts"]["stale"] / sem["conflicts"]["n"], 3)
        figures[f"sem_{tag}_pairs"] = round(sem["distinct_pair_rate"], 3)
        best[tag] = max(entry(n, b)["randomized"]["overall_final_survival"] for n in COMPACTORS)
    line = " ".join(f"{k}={v:g}" for k, v in figures.items())
    print("KIT compactd " + line + " | best kit baseline " +
          " ".join(f"{k}={v:g}" for k, v in best.items()))

    if a.floors and a.check:
        below = []
        with open(a.floors) as fh:
            for raw in fh:
                raw = raw.split("#", 1)[0].strip()
                if raw:
                    name, floor = raw.split()
                    if figures.get(name, -1) < float(floor):
                        below.append(f"{name}={figures.get(name)} < {floor}")
        if below:
            print("below the floors: " + ", ".join(below))
            return 1
        print("every figure at or above its floor")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
