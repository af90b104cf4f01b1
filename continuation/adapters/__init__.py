"""In-process adapters from agent SDKs to :mod:`continuation.api` (optional extras).

- :mod:`.claude_agent_sdk` (``pip install 'continuation-engine[claude-agent-sdk]'``): the SDK's
  ``hooks`` mapping, whose callbacks hand Claude Code's hook payloads to the hook handlers in
  process.
- :mod:`.openai_agents` (``pip install 'continuation-engine[openai-agents]'``): ``RunHooks``
  that record tool calls and turn ends, and the next run's input from ``context()``.

Adapters fail open: an error of ours is logged (logger ``continuation.adapters``) and the
agent goes on, as the hook command does.
"""
