#!/usr/bin/env bash
# Real Codex CLI 0.171.0 end-to-end test, from the shell.
#
# Installs @openai/codex@0.171.0 into ~/.cache/continuation-e2e (or $CONTINUATION_E2E_CACHE)
# when absent, serves the scripted Responses-API stand-in on 127.0.0.1, installs our hooks
# into a temporary CODEX_HOME, runs `codex exec` then `codex exec resume --last` with a low
# model_auto_compact_token_limit (a real auto-compaction), and checks the engine's input
# states and that the first request after the compaction carries the continuation checkpoint.
# Same code as tests/e2e/test_codex_e2e.py; prints a summary of the run at the end.
#
# Usage: scripts/e2e_codex.sh [extra pytest args]      (PYTHON=... to choose the interpreter)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-}"
if [[ -z "$PYTHON" ]]; then
  if [[ -x /tmp/venv/bin/python ]]; then PYTHON=/tmp/venv/bin/python; else PYTHON=python3; fi
fi
report_dir="$(mktemp -d "${TMPDIR:-/tmp}/continuation-e2e-codex.XXXXXX")"
status=0
start=$(date +%s)
CONTINUATION_E2E_REPORT_DIR="$report_dir" timeout 900 "$PYTHON" -m pytest -m e2e -v -rs \
  tests/e2e/test_codex_e2e.py "$@" || status=$?
end=$(date +%s)
for report in "$report_dir"/codex-e2e-report-*.json; do
  [[ -f "$report" ]] || continue
  "$PYTHON" - "$report" <<'PY'
import json, sys
r = json.load(open(sys.argv[1], encoding="utf-8"))
print(f"\n== Codex e2e summary: {r['mode']} compaction ==")
print("codex:", r["codex"])
print("hooks installed via:", r["install"]["via"], "->", r["install"]["path"])
for run in r["runs"]:
    print(f"  {run['label']}: exit={run['exit']} {run['seconds']}s hooks={' > '.join(run['hook_events'])}")
events = r.get("events", {}).get("events", []) if isinstance(r.get("events"), dict) else []
print("  engine events:", " > ".join(e["type"] + (f"({e['data'].get('source')})" if e["type"] == "session_started" else "") for e in events))
print("  requests:", " ".join(q["kind"] + ("*" if q["capsule_items"] else "") for q in r["requests"]), "(* = carries the checkpoint)")
print("  checkpoint in first request after compaction:", r["marker_in_request_after_compaction"])
inputs = r.get("inputs", {}).get("inputs", []) if isinstance(r.get("inputs"), dict) else []
for i in inputs:
    print(f"  input {i['state']:>11}: {i['text']}")
print("  scenario seconds:", r["seconds"])
print("  notes.txt lines:", (r["notes_txt"] or "").splitlines())
print("  report:", sys.argv[1])
PY
done
for report in "$report_dir"/codex-e2e-{trust,killed,interrupted,long-request}.json; do
  [[ -f "$report" ]] || continue
  "$PYTHON" - "$report" <<'PY'
import json, sys
r = json.load(open(sys.argv[1], encoding="utf-8"))
name = sys.argv[1].rsplit("/", 1)[-1]
if "trusted_run" in r:
    print(f"\n== {name} ==\n  untrusted hooks fired: {r['untrusted_run']['hook_events']}"
          f"\n  after trusting ({r['trust_entries']} entries, codex says {r['after_trust']['codex']}): "
          f"{r['trusted_run']['hook_events']}")
elif "killed_run" in r:
    states = {i['text']: i['state'] for i in r['inputs']['inputs']}
    print(f"\n== {name} ==\n  killed after: {r['killed_run']['hook_events']}\n  after recover: {states}")
else:
    print(f"\n== {name} ==\n  context sizes after compaction: {[len(t) for t in r['context_items_after_compaction']]}")
print("  scenario seconds:", r["seconds"])
PY
done
echo "total wall time: $((end - start)) s"
exit "$status"
