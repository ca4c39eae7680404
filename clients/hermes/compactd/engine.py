"""``CompactdEngine``: a hermes context engine that asks compactd to compact.

hermes (``agent/context_engine.py``) reads a fixed set of attributes from its engine and
calls ``compress()`` synchronously on the agent thread; the built-in engine blocks there on
its own model call, so blocking on one HTTP request to compactd is the same shape.

Design decisions:

* **Plain data only.** The host deep-copies the registered engine for every agent and falls
  back to its built-in compressor when the copy fails, so the engine holds numbers, strings
  and booleans; every request opens its own connection (``transport``).
* **Settings from the user's config.** The host hands ``compression.*`` only to its built-in
  engine, so ``update_model`` reads them with ``hermes_cli.config.load_config()`` and derives
  ``threshold_tokens`` with the formula of docs/hermes.md §4 (compactd applies the same
  formula; the engine needs it locally for ``should_compress``).
* **compactd is stateless; the engine carries the state.** ``compression_count`` and the
  previous summary body go out with every request and come back updated.
* **Failures never pass silently.** A failed request (unreachable, timeout, any 4xx or 5xx,
  a malformed answer) or ``reason: summary-failed`` returns the input unchanged with
  ``_last_compress_aborted`` and ``_last_summary_error`` set, which the host turns into
  "keep the session and warn", and is logged as a warning.
* **What was compacted can be found again.** hermes drops the messages a compaction
  summarized; the engine keeps them aside (the newest ``ARCHIVE_MAX_BYTES`` of them, for
  the session) and offers the agent a ``compactd_recall`` tool: hermes lets a context
  engine add tools (``get_tool_schemas``/``handle_tool_call``, registered at agent start
  unless the toolsets leave out ``context_engine``), and the tool asks compactd's
  ``/v1/hermes/recall`` to search them.
* **Guards stay local**, as hermes's own engine keeps them: after an aborted attempt
  automatic compaction pauses for ``FAILURE_COOLDOWN_SECONDS`` (a manual ``/compress``
  passes ``force`` and retries at once), and two compactions in a row that either did not
  get the real prompt under the threshold or used the static fallback stop automatic
  compaction until a healthy one or a new session.
"""

from __future__ import annotations

import datetime
import json
import logging
import time
from typing import Any, Dict, List, Optional

from agent.context_engine import ContextEngine

from . import transport

logger = logging.getLogger(__name__)

ENGINE_NAME = "compactd"

# docs/hermes.md §4 (hermes 0.19.0 context_compressor.py 1249–1304).
_MINIMUM_CONTEXT_LENGTH = 64_000
_SMALL_WINDOW_LIMIT = 512_000
_SMALL_WINDOW_PERCENT = 0.75
_MIN_TRIGGER_RATIO = 0.85

# How long automatic compaction pauses after an aborted attempt. hermes's own engine pauses
# for 60 s to 10 min depending on the failure; compactd failures are mostly "not running",
# which a short pause retries soon enough without hammering it every turn.
FAILURE_COOLDOWN_SECONDS = 60.0

_TRUE_WORDS = {"true", "1", "yes"}

# The compacted messages kept for recall, as JSON bytes: the oldest go first past it.
ARCHIVE_MAX_BYTES = 8 * 1024 * 1024

RECALL_TOOL = "compactd_recall"

RECALL_SCHEMA = {
    "name": RECALL_TOOL,
    "description": (
        "Search the earlier part of this conversation that was compacted into a summary: "
        "messages, tool calls and tool results the summary may have left out. Use exact "
        "identifiers (file paths, function names, error codes) or a few distinctive words. "
        "Returns the best matching passages, best first."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Words or identifiers to search for."},
            "limit": {"type": "integer", "minimum": 1, "maximum": 50,
                      "description": "How many matches to return (default 5)."},
        },
        "required": ["query"],
    },
}


def effective_threshold_percent(context_length: int, threshold_percent: float) -> float:
    """The small-window floor: windows under 512K trigger at no less than 75 %."""
    if context_length and 0 < context_length < _SMALL_WINDOW_LIMIT:
        return max(threshold_percent, _SMALL_WINDOW_PERCENT)
    return threshold_percent


def threshold_tokens_for(
    context_length: int, threshold_percent: float, max_tokens: Optional[int] = None
) -> int:
    """``thresholdTokens`` of §4 from the configured (pre-floor) threshold percent."""
    pct = effective_threshold_percent(context_length, threshold_percent)
    window = context_length - (max_tokens or 0)
    if window <= 0:
        window = context_length
    floored = max(int(window * pct), _MINIMUM_CONTEXT_LENGTH)
    if window > 0 and floored >= window:
        return max(1, min(int(window * _MIN_TRIGGER_RATIO), window - 1))
    return floored


def _positive_int(value: Any) -> Optional[int]:
    """A positive integer, or None (hermes's rule for ``max_tokens``)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


def read_settings(config: Any) -> Dict[str, Any]:
    """The §4 settings from a hermes config dict, parsed as hermes's agent_init parses them.

    A value hermes would reject keeps its default (with a warning) instead of failing the
    agent: a plugin must not stop the agent from starting.
    """
    settings: Dict[str, Any] = {
        "thresholdPercent": 0.50,
        "targetRatio": 0.20,
        "protectFirstN": 3,
        "protectLastN": 20,
        "maxTokens": None,
        "abortOnSummaryFailure": False,
    }
    if not isinstance(config, dict):
        return settings
    comp = config.get("compression")
    if isinstance(comp, dict):
        for key, target, parse in (
            ("threshold", "thresholdPercent", float),
            ("target_ratio", "targetRatio", float),
            ("protect_first_n", "protectFirstN", lambda v: max(0, int(v))),
            ("protect_last_n", "protectLastN", int),
        ):
            if key in comp and comp[key] is not None:
                try:
                    settings[target] = parse(comp[key])
                except (TypeError, ValueError):
                    logger.warning(
                        "compactd: compression.%s = %r is not a number; using %r",
                        key, comp[key], settings[target],
                    )
        if "abort_on_summary_failure" in comp:
            settings["abortOnSummaryFailure"] = (
                str(comp.get("abort_on_summary_failure")).lower() in _TRUE_WORDS
            )
    model = config.get("model")
    if isinstance(model, dict):
        settings["maxTokens"] = _positive_int(model.get("max_tokens"))
    return settings


def _load_user_settings() -> Dict[str, Any]:
    try:
        from hermes_cli.config import load_config

        config = load_config()
    except Exception as exc:  # a broken config must not break the agent
        logger.warning("compactd: could not read hermes config (%s); using defaults", exc)
        config = None
    return read_settings(config)


def _today() -> str:
    """The user's local date, as hermes dates its summaries (``hermes_time.now``)."""
    try:
        from hermes_time import now

        return now().date().isoformat()
    except Exception:
        return datetime.date.today().isoformat()


class CompactdEngine(ContextEngine):
    """Context engine that delegates ``compress()`` to compactd's ``/v1/hermes/compress``."""

    @property
    def name(self) -> str:
        return ENGINE_NAME

    def __init__(self) -> None:
        self.settings: Dict[str, Any] = _load_user_settings()
        self.context_length = 0
        self.threshold_tokens = 0
        # A max_tokens passed by the host wins over model.max_tokens (hermes 0.19.0 passes none).
        self._max_tokens_override: Optional[int] = None
        self._apply_settings()

        self.last_prompt_tokens = 0
        self.last_completion_tokens = 0
        self.last_total_tokens = 0
        # Written by the host after a compaction (conversation_compression.py).
        self.last_compression_rough_tokens = 0
        self.awaiting_real_usage_after_compression = False
        self._verify_compaction_cleared_threshold = False

        self.compression_count = 0
        self._previous_summary: Optional[str] = None
        self._clear_attempt()
        self._ineffective_compression_count = 0
        self._fallback_compression_streak = 0
        self._failure_cooldown_until = 0.0
        # What compactions took out of the context, for the recall tool.
        self._archive: List[Dict[str, Any]] = []
        self._archive_sizes: List[int] = []

    # -- settings and threshold ------------------------------------------------------------

    def _apply_settings(self) -> None:
        s = self.settings
        if self._max_tokens_override is not None:
            s["maxTokens"] = self._max_tokens_override
        # The output reservation; hermes's delegate tool reads it to measure headroom.
        self.max_tokens = s["maxTokens"]
        self.protect_first_n = s["protectFirstN"]
        self.protect_last_n = s["protectLastN"]
        self.threshold_percent = effective_threshold_percent(
            self.context_length, s["thresholdPercent"]
        )
        self.threshold_tokens = (
            threshold_tokens_for(self.context_length, s["thresholdPercent"], s["maxTokens"])
            if self.context_length > 0
            else 0
        )

    def update_model(
        self,
        model: str = "",
        context_length: int = 0,
        base_url: str = "",
        api_key: str = "",
        provider: str = "",
        api_mode: str = "",
        **kwargs: Any,
    ) -> None:
        """Called at agent construction and on every model switch or fallback.

        The model's own credentials are not kept: compactd has its own summarizer.
        """
        try:
            self.context_length = max(0, int(context_length or 0))
        except (TypeError, ValueError):
            self.context_length = 0
        self.settings = _load_user_settings()
        # hermes passes no max_tokens today; honour it if a later host does.
        self._max_tokens_override = _positive_int(kwargs.get("max_tokens"))
        self._apply_settings()

    # -- token tracking and the trigger -----------------------------------------------------

    def update_from_response(self, usage: Dict[str, Any]) -> None:
        usage = usage if isinstance(usage, dict) else {}
        self.last_prompt_tokens = usage.get("prompt_tokens", 0) or 0
        self.last_completion_tokens = usage.get("completion_tokens", 0) or 0
        self.last_total_tokens = usage.get(
            "total_tokens", self.last_prompt_tokens + self.last_completion_tokens
        ) or 0
        # The first real reading after a compaction says whether it got under the line.
        if self._verify_compaction_cleared_threshold and self.last_prompt_tokens > 0:
            if self.last_prompt_tokens >= self.threshold_tokens:
                self._ineffective_compression_count += 1
                logger.warning(
                    "compactd: compaction did not clear the threshold: %d tokens still >= %d",
                    self.last_prompt_tokens, self.threshold_tokens,
                )
            else:
                self._ineffective_compression_count = 0
        self._verify_compaction_cleared_threshold = False
        self.awaiting_real_usage_after_compression = False

    def should_compress(self, prompt_tokens: Optional[int] = None) -> bool:
        tokens = prompt_tokens if prompt_tokens is not None else self.last_prompt_tokens
        if self.threshold_tokens <= 0 or tokens is None or tokens < self.threshold_tokens:
            return False
        return not self._automatic_compression_blocked()

    def should_defer_preflight_to_real_usage(self, rough_tokens: int) -> bool:
        # Right after a compaction the rough estimate may still count the old request;
        # wait one turn for the provider's real count (hermes #36718).
        return rough_tokens >= self.threshold_tokens and self.awaiting_real_usage_after_compression

    def get_active_compression_failure_cooldown(
        self, *, refresh: bool = False
    ) -> Optional[Dict[str, Any]]:
        """The pause after an aborted attempt, or None; ``refresh`` is accepted for the host
        (hermes's engine re-reads a database there; this one keeps the pause in memory)."""
        remaining = self._failure_cooldown_until - time.monotonic()
        if remaining <= 0:
            return None
        return {
            "cooldown_until": time.time() + remaining,
            "remaining_seconds": remaining,
            "error": self._last_summary_error,
        }

    def _automatic_compression_blocked(self) -> bool:
        if self.get_active_compression_failure_cooldown() is not None:
            return True
        if self._ineffective_compression_count >= 2 or self._fallback_compression_streak >= 2:
            logger.warning(
                "compactd: automatic compaction paused: recent compactions did not restore "
                "a healthy context (ineffective=%d, fallback=%d). /compress retries, /new "
                "starts fresh.",
                self._ineffective_compression_count, self._fallback_compression_streak,
            )
            return True
        return False

    # -- compress ---------------------------------------------------------------------------

    def _clear_attempt(self) -> None:
        """Reset what callers read after one compress() call."""
        self._last_compress_aborted = False
        self._last_compression_made_progress = False
        self._last_summary_error: Optional[str] = None
        self._last_summary_fallback_used = False
        self._last_summary_dropped_count = 0
        self._last_aux_model_failure_error: Optional[str] = None
        self._last_aux_model_failure_model: Optional[str] = None

    def compress(
        self,
        messages: List[Dict[str, Any]],
        current_tokens: Optional[int] = None,
        focus_topic: Optional[str] = None,
        force: bool = False,
        memory_context: str = "",
    ) -> List[Dict[str, Any]]:
        self._clear_attempt()
        if force:
            self._failure_cooldown_until = 0.0
        body = {
            "messages": messages,
            "contextLength": self.context_length,
            "settings": dict(self.settings),
            "state": {
                "compressionCount": self.compression_count,
                "previousSummary": self._previous_summary,
            },
            "focusTopic": focus_topic or None,
            "memoryContext": memory_context or "",
            "currentTokens": current_tokens if isinstance(current_tokens, int) else None,
            "today": _today(),
        }
        try:
            answer = transport.post_compress(body)
        except transport.CompactdError as exc:
            return self._abort(messages, str(exc))

        if answer.get("compressed") is True:
            compacted = answer.get("messages")
            if not isinstance(compacted, list) or not compacted:
                return self._abort(messages, "compactd answered compressed: true without messages")
            self._take_state(answer.get("state"))
            self._keep_compacted(messages, answer.get("sources"))
            fallback = answer.get("fallback") if isinstance(answer.get("fallback"), dict) else {}
            used = fallback.get("used") is True
            self._last_summary_fallback_used = used
            if used:
                self._last_summary_error = str(fallback.get("error") or "summary unavailable")
                dropped = fallback.get("droppedCount")
                self._last_summary_dropped_count = dropped if isinstance(dropped, int) else 0
                self._fallback_compression_streak += 1
            elif answer.get("summarizer") == "llm":
                self._fallback_compression_streak = 0
            self._last_compression_made_progress = True
            self._verify_compaction_cleared_threshold = False
            logger.info(
                "compactd: %d -> %d messages (%s tokens -> %s, summarizer %s)",
                len(messages), len(compacted), answer.get("tokensBefore"),
                answer.get("tokensAfter"), answer.get("summarizer"),
            )
            return compacted

        if answer.get("compressed") is False:
            reason = answer.get("reason")
            if reason == "summary-failed":
                error = answer.get("error")
                return self._abort(
                    messages, f"compactd could not summarize: {error or 'summary failed'}"
                )
            logger.info("compactd: nothing compacted (%s)", reason)
            return messages

        return self._abort(messages, "compactd answered without a 'compressed' verdict")

    # -- recall -----------------------------------------------------------------------------

    def _keep_compacted(self, messages: List[Dict[str, Any]], sources: Any) -> None:
        """Keep the input messages the answer no longer holds (``sources`` names, for each
        output message, the input message it came from)."""
        if not isinstance(sources, list):
            return
        kept = {i for i in sources if isinstance(i, int) and not isinstance(i, bool)}
        for i, m in enumerate(messages):
            if i in kept or not isinstance(m, dict):
                continue
            try:
                size = len(json.dumps(m, ensure_ascii=False, allow_nan=False).encode("utf-8"))
            except (TypeError, ValueError):
                continue
            self._archive.append(m)
            self._archive_sizes.append(size)
        total = sum(self._archive_sizes)
        drop = 0
        while total > ARCHIVE_MAX_BYTES and drop < len(self._archive):
            total -= self._archive_sizes[drop]
            drop += 1
        del self._archive[:drop]
        del self._archive_sizes[:drop]

    def get_tool_schemas(self) -> List[Dict[str, Any]]:
        return [RECALL_SCHEMA]

    def handle_tool_call(self, name: str, args: Dict[str, Any], **kwargs) -> str:
        if name != RECALL_TOOL:
            return json.dumps({"error": f"Unknown context engine tool: {name}"})
        query = args.get("query") if isinstance(args, dict) else None
        if not isinstance(query, str) or not query.strip():
            return json.dumps({"error": "query is required: the words or identifiers to search for"})
        if not self._archive:
            return json.dumps({"query": query, "searched": 0, "matches": [],
                               "note": "nothing has been compacted in this session yet"})
        body: Dict[str, Any] = {"messages": self._archive, "q": query}
        limit = args.get("limit")
        if isinstance(limit, int) and not isinstance(limit, bool):
            body["limit"] = max(1, min(limit, 50))
        try:
            answer = transport.post_recall(body)
        except transport.CompactdError as exc:
            return json.dumps({"error": str(exc)})
        return json.dumps(answer, ensure_ascii=False)

    def _abort(self, messages: List[Dict[str, Any]], error: str) -> List[Dict[str, Any]]:
        """Keep the session as it is and tell the host why (it warns the user)."""
        self._last_compress_aborted = True
        self._last_summary_error = error
        self._failure_cooldown_until = time.monotonic() + FAILURE_COOLDOWN_SECONDS
        logger.warning("compactd: compaction aborted, session kept unchanged: %s", error)
        return messages

    def _take_state(self, state: Any) -> None:
        if not isinstance(state, dict):
            return
        count = state.get("compressionCount")
        if isinstance(count, int) and not isinstance(count, bool):
            self.compression_count = count
        summary = state.get("previousSummary")
        self._previous_summary = summary if isinstance(summary, str) and summary else None

    # -- session lifecycle ------------------------------------------------------------------

    def _clear_session(self) -> None:
        self._previous_summary = None
        self._archive = []
        self._archive_sizes = []
        self._clear_attempt()
        self._ineffective_compression_count = 0
        self._fallback_compression_streak = 0
        self._failure_cooldown_until = 0.0
        self._verify_compaction_cleared_threshold = False
        self.awaiting_real_usage_after_compression = False
        self.last_compression_rough_tokens = 0

    def on_session_reset(self) -> None:
        super().on_session_reset()  # token counters and compression_count
        self._clear_session()

    def on_session_end(self, session_id: str, messages: List[Dict[str, Any]]) -> None:
        # A real end (CLI exit, gateway expiry), not a compaction boundary: the next
        # session must not inherit this one's summary or count.
        self.compression_count = 0
        self._clear_session()

    def get_status(self) -> Dict[str, Any]:
        status = super().get_status()
        status["engine"] = ENGINE_NAME
        status["compactd_url"] = transport.display_url(transport.endpoint()["url"])
        return status
