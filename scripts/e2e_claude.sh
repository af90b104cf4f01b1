#!/usr/bin/env bash
# Real Claude Code end-to-end test: installs @anthropic-ai/claude-code@2.1.332 with npm into
# ${CONTINUATION_E2E_CACHE:-~/.cache/continuation-e2e} when absent, serves a scripted Messages-API
# stand-in on 127.0.0.1 and drives one session (text prompt, Bash tool call, /compact, prompt after
# the compaction, SIGKILL mid tool call) through our hooks. Skips (exit 0, reason printed) when
# node/npm are missing. Extra arguments go to pytest (e.g. -k hook_context).
set -euo pipefail
cd "$(dirname "$0")/.."
# The interpreter with the project installed: $PYTHON, else python3 (or the shared dev venv).
PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import continuation, pytest' 2>/dev/null && [ -x /tmp/venv/bin/python ]; then
  PYTHON=/tmp/venv/bin/python
fi
start=$(date +%s)
# -rs prints skip reasons (node/npm missing, commands not there yet); -s shows the context path line.
timeout 900 "$PYTHON" -m pytest -m e2e -rs -s -q tests/e2e/test_claude_e2e.py "$@"
echo "e2e_claude: wall time $(( $(date +%s) - start )) s"
