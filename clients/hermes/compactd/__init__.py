"""compactd context engine for hermes-agent 0.19.0.

Installed as a user plugin (``~/.hermes/plugins/compactd/``) or as a pip package exposing
the ``hermes_agent.plugins`` entry point; selected with ``context.engine: compactd`` and
enabled with ``plugins.enabled: [compactd]``. See README.md beside this file.
"""

from .engine import CompactdEngine

__all__ = ["CompactdEngine", "register"]


def register(ctx) -> None:
    """hermes's plugin hook: offer the engine; hermes uses it when context.engine names it."""
    ctx.register_context_engine(CompactdEngine())
