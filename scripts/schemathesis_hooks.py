"""schemathesis hooks for compactd (loaded by scripts/schemathesis via SCHEMATHESIS_HOOKS).

The session endpoints also take a pi session file as `application/x-ndjson` /
`application/jsonl`. schemathesis has no serializer for those media types and would
skip (error on) every such case; send strings as UTF-8 text, anything else as JSON.
"""

import json

import schemathesis


@schemathesis.serializer("application/x-ndjson", "application/jsonl")
def jsonl(ctx, value):
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    return json.dumps(value).encode("utf-8")
