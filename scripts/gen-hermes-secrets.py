#!/usr/bin/env python3
"""Writes tests/fixtures/hermes-secrets.expected.jsonl: what hermes-agent 0.19.0's
redactor makes of each case of tests/fixtures/hermes-secrets.txt, in its default mode and
in the memory-context mode (force=True, redact_url_credentials=True). Run from the
repository root with Python 3.11 and the unpacked package on the path:

    PYTHONPATH=/work/hermes-ref/src python3.11 scripts/gen-hermes-secrets.py

Case format: one case a line; blank lines and lines starting with '#' are skipped; the
escapes \\n \\t \\r \\\\ and \\uXXXX stand for those characters.

Each output line holds the case's line number, its input, both outputs and, per mode, the
"masked" words: runs of 4+ ASCII letters/digits of the input that hermes's output no longer
contains. The Rust test requires the same outputs and, above all, that none of those words
survives in compactd's (contract H10).
"""
import json
import os
import re
import sys

os.environ["HERMES_REDACT_SECRETS"] = "true"
from agent.redact import redact_sensitive_text  # noqa: E402

assert sys.version_info[:2] == (3, 11), "hermes-agent 0.19.0 runs on CPython 3.11"

ESCAPE = re.compile(r"\\(n|t|r|\\|u[0-9a-fA-F]{4})")


def unescape(line):
    def one(m):
        e = m.group(1)
        return {"n": "\n", "t": "\t", "r": "\r", "\\": "\\"}.get(e) or chr(int(e[1:], 16))

    return ESCAPE.sub(one, line)


def masked(text, out):
    words = dict.fromkeys(re.findall(r"[A-Za-z0-9]{4,}", text))
    return [w for w in words if w not in out]


def main():
    src = "tests/fixtures/hermes-secrets.txt"
    dst = "tests/fixtures/hermes-secrets.expected.jsonl"
    rows = []
    with open(src, encoding="utf-8") as f:
        for number, raw in enumerate(f.read().split("\n"), 1):
            if not raw.strip() or raw.startswith("#"):
                continue
            text = unescape(raw)
            default = redact_sensitive_text(text)
            memory = redact_sensitive_text(text, force=True, redact_url_credentials=True)
            rows.append(
                {
                    "line": number,
                    "input": text,
                    "default": default,
                    "memory": memory,
                    "maskedDefault": masked(text, default),
                    "maskedMemory": masked(text, memory),
                }
            )
    with open(dst, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{len(rows)} cases -> {dst}")


if __name__ == "__main__":
    main()
