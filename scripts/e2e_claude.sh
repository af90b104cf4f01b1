#!/usr/bin/env bash
# Real Claude Code end-to-end test: installs @anthropic-ai/claude-code@2.1.332 with npm into
# ${CONTINUATION_E2E_CACHE:-~/.cache/continuation-e2e} when absent, serves a scripted Messages-API
# stand-in on 127.0.0.1 and drives one session (text prompt, Bash tool call, /compact, prompt after
# the compaction, SIGKILL mid tool call, resume after the crash) through our hooks, plus a prompt
# typed mid-turn and a mid-turn auto-compaction. Skips (with the reason printed) when node/npm are
# missing. Extra arguments go to pytest (e.g. -k hook_context).
#
# Python: $PYTHON, else the active virtualenv's, else python3; it must have the project installed
# (pip install -e '.[test]'), because Claude Code runs our hook as the `continuation` command.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${PYTHON:-}" ]; then
  if [ -n "${VIRTUAL_ENV:-}" ]; then PYTHON="$VIRTUAL_ENV/bin/python"; else PYTHON=python3; fi
fi
if ! "$PYTHON" -I -c 'import importlib.metadata as m, pytest; m.version("continuation-engine")' 2>/dev/null; then
  echo "e2e_claude: $PYTHON lacks the project or pytest: run pip install -e '.[test]' or set PYTHON" >&2
  exit 2
fi
start=$(date +%s)
# -rs prints skip reasons; -s shows which path the context took ("context path taken by ...").
timeout 900 "$PYTHON" -m pytest -p no:cacheprovider -m e2e -rs -s -q tests/e2e/test_claude_e2e.py "$@"
echo "e2e_claude: wall time $(( $(date +%s) - start )) s"
