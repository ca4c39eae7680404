"""Wrappers around hermes's helpers: what one `compress()` run did, and the patched reference.

`Run.patch` switches the divergences of docs/hermes.md on (the expected values of compactd)
or off (hermes 0.19.0 as shipped). With `patch` off the wrappers only record.

* H1: the input is wrapped in `NullSafe` dicts whose `.get` treats `role: null` as absent,
  a null or numeric part `text` as `""`, `function: null` as `{}` and `arguments: null` as
  `""`: exactly the reads where hermes crashes, nowhere else (repr/str still show `None`,
  so the token counts are hermes's).
* H2: a head covering everything stops before hermes's IndexError (`H2Signal`).
* H5: body extraction also cuts at the first end marker (the merge rewrite is in harness.py).
* H6: the messages hermes drops between `compressStart` and an earlier summary, and the own
  text of a merged summary message, are put ahead of the turns.
* H7: the head decays when a handoff summary is in the messages.
* H9: no turns to summarize stops before the model call (`H9Signal`).
"""

import reference as R
from reference import CC

CCls = CC.ContextCompressor


class H2Signal(Exception):
    pass


class H9Signal(Exception):
    pass


class Run:
    def __init__(self, patch):
        self.patch = patch
        self.div = set()
        self.head = None
        self.pruned = None
        self.pruned_idx = None
        self.cs = None
        self.ce = None
        self.found = None
        self.extra = []
        self.turns = None
        self.focus = None
        self.memory = None
        self.prev_at_call = None
        self.budget = None
        self.serialized = None
        self.summary = None
        self.fallback_summary = None
        self.copies = {}
        self.sources = None
        self.prompt = None
        self.stub = None


RUN = Run(False)


class NullSafe(dict):
    """A message, part, call or function dict that reads null the way compactd does (H1)."""

    def copy(self):
        return NullSafe(self)

    def get(self, key, default=None):
        if key not in self:
            return default
        value = dict.__getitem__(self, key)
        if value is None and key == "role":
            return default
        if key == "text" and (value is None or isinstance(value, (int, float))):
            return ""
        if value is None and key == "function":
            return NullSafe()
        if value is None and key == "arguments":
            return ""
        return value


def nullsafe(value, depth=0):
    if isinstance(value, dict):
        return NullSafe((k, nullsafe(v, depth + 1)) for k, v in value.items())
    if isinstance(value, list) and depth < 4:
        return [nullsafe(v, depth + 1) for v in value]
    return value


def summary_present(messages):
    start = 1 if messages and messages[0].get("role") == "system" else 0
    return any(CCls._is_context_summary_content(m.get("content")) for m in messages[start:]
               if isinstance(m, dict))


def own_part(msg):
    """The non-summary text of a merged summary message (H6), or None: before the merge
    delimiter without the PRIOR CONTEXT header (hermes's form), or after the first end
    marker of a summary (the H5 form); stripped; a copy of the message with that text."""
    text = CC._content_text_for_contains(msg.get("content"))
    if R.DELIMITER in text:
        before = text.split(R.DELIMITER, 1)[0].strip()
        if before.startswith(R.HEADER):
            before = before[len(R.HEADER):]
        own = before.strip()
    elif CCls._is_context_summary_content(text) and R.END_MARKER in text:
        own = text.split(R.END_MARKER, 1)[1].strip()
    else:
        return None
    if not own:
        return None
    copy = dict(msg)
    copy["content"] = own
    return copy


def w_protect_head_size(self, messages):
    r = R.ORIG["_protect_head_size"](self, messages)
    if RUN.patch and summary_present(messages):
        sys_head = 1 if messages and messages[0].get("role") == "system" else 0
        if r != sys_head:
            RUN.div.add("H7")
            r = sys_head
    RUN.head = r
    return r


def w_prune(self, messages, protect_tail_count, protect_tail_tokens=None):
    out, count = R.ORIG["_prune_old_tool_results"](self, messages, protect_tail_count, protect_tail_tokens)
    RUN.pruned = out
    RUN.pruned_idx = [i for i, (a, b) in enumerate(zip(messages, out)) if a != b]
    return out, count


def w_tail_cut(self, messages, head_end, token_budget=None):
    if RUN.patch and head_end >= len(messages):
        # compactd reports the cut clamped to n, and no turns.
        RUN.cs, RUN.ce, RUN.turns = head_end, len(messages), []
        raise H2Signal()
    r = R.ORIG["_find_tail_cut_by_tokens"](self, messages, head_end, token_budget)
    RUN.cs, RUN.ce = head_end, r
    return r


def w_find_latest(cls, messages, start, end):
    idx, body = R.ORIG["_find_latest_context_summary"](cls, messages, start, end)
    RUN.found = idx
    if RUN.patch and idx is not None and RUN.cs is not None and idx >= RUN.cs:
        extra = list(messages[RUN.cs:idx])
        own = own_part(messages[idx])
        if own is not None:
            extra.append(own)
        RUN.extra = extra
    return idx, body


def w_strip_prefix(summary):
    text = R.ORIG["_strip_summary_prefix"](summary)
    if RUN.patch and R.END_MARKER in text:
        RUN.div.add("H5")
        text = text.split(R.END_MARKER, 1)[0].rstrip()
    return text


def _turns(turns):
    if RUN.patch and RUN.extra:
        RUN.div.add("H6")
        return RUN.extra + list(turns)
    return list(turns)


def w_generate(self, turns, focus_topic=None, memory_context=""):
    turns = _turns(turns)
    if RUN.patch and not turns:
        RUN.div.add("H9")
        RUN.turns = []
        raise H9Signal()
    RUN.turns = turns
    RUN.focus = focus_topic
    RUN.memory = memory_context
    RUN.prev_at_call = self._previous_summary
    r = R.ORIG["_generate_summary"](self, turns, focus_topic=focus_topic, memory_context=memory_context)
    RUN.summary = r
    return r


def w_fallback(self, turns, reason=None):
    turns = _turns(turns)
    summary_h, body_h = R.fallback_body(self, turns, reason)
    assert R.fallback_cut(CCls._with_summary_prefix(body_h)) == summary_h, "fallback cut"
    values = R.parse_fallback(body_h, R.HT)
    assert values is not None, "fallback does not parse"
    if values["previous_note"]:
        values["previous_note"] = "\n\n" + R.CONF_TEXTS["fallback_note"]
    body_c = R.fill(R.CONF_TEXTS["fallback"], values).strip()
    summary_c = R.fallback_cut(CCls._with_summary_prefix(body_c))
    RUN.fallback_summary = summary_c
    return summary_c


def w_budget(self, turns):
    r = R.ORIG["_compute_summary_budget"](self, turns)
    RUN.budget = r
    return r


def w_serialize(self, turns):
    r = R.ORIG["_serialize_for_summary"](self, turns)
    RUN.serialized = r
    return r


def w_copy(msg):
    fresh = R.ORIG["_fresh_compaction_message_copy"](msg)
    RUN.copies[id(fresh)] = id(msg)
    return fresh


def w_sanitize(self, messages):
    index = {id(m): i for i, m in enumerate(RUN.pruned or [])}
    src = {id(m): index.get(RUN.copies.get(id(m))) for m in messages}
    out = R.ORIG["_sanitize_tool_pairs"](self, messages)
    RUN.sources = [src.get(id(m)) for m in out]
    return out


class Stub:
    """Stands in for `call_llm`: records the prompt, answers or raises."""

    def __call__(self, **kwargs):
        RUN.prompt = kwargs["messages"][0]["content"]
        assert "max_tokens" not in kwargs
        b = RUN.stub
        if "text" in b:
            from types import SimpleNamespace as NS
            return NS(choices=[NS(message=NS(content=b["text"]))])
        raise make_error(b["error"], b["message"])


class StatusError(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status_code = status


class ConnectionLostError(Exception):
    pass


def make_error(kind, message):
    import json
    if kind == "status":
        code, text = message.split(" ", 1)
        return StatusError(int(code), text)
    if kind == "connection":
        return ConnectionLostError(message)
    if kind == "json":
        return json.JSONDecodeError("Expecting value", message, 0)
    return RuntimeError(message)


def install():
    CCls._protect_head_size = w_protect_head_size
    CCls._prune_old_tool_results = w_prune
    CCls._find_tail_cut_by_tokens = w_tail_cut
    CCls._find_latest_context_summary = classmethod(w_find_latest)
    CCls._strip_summary_prefix = staticmethod(w_strip_prefix)
    CCls._generate_summary = w_generate
    CCls._build_static_fallback_summary = w_fallback
    CCls._compute_summary_budget = w_budget
    CCls._serialize_for_summary = w_serialize
    CCls._sanitize_tool_pairs = w_sanitize
    CC._fresh_compaction_message_copy = w_copy
    CC.call_llm = Stub()


def start(patch):
    global RUN
    RUN = Run(patch)
    return RUN
