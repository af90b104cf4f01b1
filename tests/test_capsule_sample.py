"""A representative thread for the capsule tests (fixed times, so snapshots are stable).

Other capsule tests import ``representative_source`` from here.
"""
from __future__ import annotations

from datetime import datetime, timezone

from capsule.source import (
    CapsuleSource,
    SourceAttachment,
    SourceBackgroundWork,
    SourceClaim,
    SourceCursor,
    SourceFact,
    SourceInput,
    SourceModelSettings,
    SourceNotice,
    SourcePermissions,
    SourcePlan,
    SourcePlanItem,
    SourcePointers,
    SourceToolCall,
    ThreadKey,
)
from capsule.tokens import OFFLINE_NAME, token_counter_for

T0 = datetime(2026, 11, 29, 9, 30, tzinfo=timezone.utc)
THREAD = "019a7c2e-thread"


def ptr(seq: int) -> str:
    return f"event:{THREAD}:{seq}"


def counter():
    """Snapshots pin the offline encoding so they do not depend on a machine's tiktoken cache."""
    return token_counter_for(OFFLINE_NAME)


def representative_source(**overrides) -> CapsuleSource:
    data = dict(
        thread=ThreadKey(runtime="codex", session_id="019a7c2e-session", thread_id=THREAD),
        generation=3,
        reason="auto",
        created_at=T0,
        inputs=[
            SourceInput(id="in-1", text="Add a --json flag to `report` and test it.", state="handled",
                        turn_id="turn-1", admitted_seq=1, pointer=ptr(1)),
            SourceInput(id="in-2", text="Also make the CSV export stream rows instead of building a list.",
                        state="pending", turn_id="turn-2", admitted_seq=14, pointer=ptr(14)),
            SourceInput(id="in-3", text="And keep the old function name as an alias.", state="pending",
                        turn_id="turn-2", admitted_seq=15, attachments=["file:docs/export.md"], pointer=ptr(15)),
            SourceInput(id="in-4", text="When done, run the whole suite.", state="queued", queued=True,
                        turn_id=None, admitted_seq=22, pointer=ptr(22)),
            SourceInput(id="in-0", text="(an earlier request the user cancelled)", state="superseded",
                        turn_id="turn-0", admitted_seq=0, pointer=ptr(0)),
        ],
        tool_calls=[
            SourceToolCall(call_id="call_a1", tool="shell", args={"command": ["pytest", "-q", "tests/test_report.py"]},
                           status="ok", started_at=T0, turn_id="turn-1", exit_code=0, pointer=ptr(5)),
            SourceToolCall(call_id="call_b7", tool="apply_patch", args={"input": "*** Begin Patch\n*** Update File: export.py\n"},
                           status="unknown", turn_id="turn-2", pointer=ptr(18)),
            SourceToolCall(call_id="call_c9", tool="shell", args={"command": ["pytest", "-q"]},
                           status="in_flight", turn_id="turn-2", pointer=ptr(20)),
        ],
        facts=[
            SourceFact(seq=8, kind="turn_completed", text="turn-1 completed", pointer=ptr(8)),
            SourceFact(seq=21, kind="crash_detected", text="codex process 4121 exited without a clean end", pointer=ptr(21)),
        ],
        claims=[
            SourceClaim(turn_id="turn-1", text="Done: `report --json` prints one object per line; tests pass.", seq=7, pointer=ptr(7)),
            SourceClaim(turn_id="turn-2", text="Next I will rewrite export_csv as a generator.", seq=17, pointer=ptr(17)),
        ],
        cursor=SourceCursor(last_completed_step="Read export.py and located export_csv()",
                            last_runtime_outcome="apply_patch started; no result recorded", pointer=ptr(18)),
        workspace={"canonical_root": "/home/dev/proj", "head": "3f2a9c1", "detached": False, "branch": "main",
                   "dirty_summary": "M export.py, ?? notes.txt", "snapshot_ref": "refs/continuation/019a7c2e/3",
                   "future_key": {"nested": True}},
        permissions=SourcePermissions(permission_mode="default", sandbox="workspace-write", approval="on-request"),
        model_settings=SourceModelSettings(model="gpt-5-codex", provider="openai", extra={"reasoning_effort": "medium"}),
        attachments=[SourceAttachment(ref="file:docs/export.md", kind="file", input_id="in-3", pointer=ptr(15))],
        plan=SourcePlan(tool="update_plan", seq=16, pointer=ptr(16), items=[
            SourcePlanItem(text="Add --json flag", status="completed"),
            SourcePlanItem(text="Stream CSV rows", status="in_progress"),
            SourcePlanItem(text="Keep old name as alias", status="pending"),
        ]),
        background=[SourceBackgroundWork(description="npm run watch (asset rebuild)", handle="bg-shell-2",
                                         handle_kind="shell", seq=12, pointer=ptr(12))],
        pointers=SourcePointers(event_seq_first=0, event_seq_last=22,
                                transcript_path="/home/dev/.codex/sessions/2026/11/29/rollout-019a7c2e.jsonl",
                                transcript_offset=48213, transcript_prefix_sha256="ab" * 32),
        notices=[SourceNotice(title="Reconciliation needed", priority=80, pointer="notice:recon:call_b7",
                              lines=["apply_patch call_b7 started before the crash and has no recorded result.",
                                     "Check export.py for the change before patching again."])],
    )
    data.update(overrides)
    return CapsuleSource(**data)


def test_sample_is_a_valid_source():
    source = representative_source()
    assert [i.state for i in source.inputs].count("pending") == 2
    assert {c.status for c in source.tool_calls} == {"ok", "unknown", "in_flight"}
