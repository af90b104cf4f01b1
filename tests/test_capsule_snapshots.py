"""Snapshots of what the model sees for a representative thread (review diffs like code)."""
from __future__ import annotations

from test_capsule_sample import counter, representative_source

from capsule import build_capsule, render_capsule
from capsule.assemble import ContextTarget, assemble_context

INSTRUCTIONS = "You are Codex, a coding agent. Follow the repository's AGENTS.md."


def test_rendered_capsule(snapshot):
    capsule = build_capsule(representative_source(), counter=counter())
    assert render_capsule(capsule) == snapshot


def test_assembled_context(snapshot):
    source = representative_source()
    capsule = build_capsule(source, counter=counter())
    actionable = [i for i in source.inputs if i.state in {"pending", "interrupted", "reconciling"}]
    queued = [i for i in source.inputs if i.state == "queued"]
    ctx = assemble_context(INSTRUCTIONS, capsule, queued_inputs=queued, actionable_inputs=actionable,
                           target=ContextTarget.codex_hook())
    assert [(m.role, m.kind, m.input_id) for m in ctx.messages] == snapshot(name="messages")
    assert ctx.as_text() == snapshot(name="text")
