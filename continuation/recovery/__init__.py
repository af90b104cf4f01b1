"""Crash recovery: who owns a session, which threads were interrupted, and what to settle.

Process liveness lives in :mod:`continuation.host.liveness`, the tool-call classification in
:mod:`continuation.toolcalls`, doctor's checks in :mod:`continuation.commands.health`.

Modules (each imports only what it needs; nothing here loads GitPython at import):

- :mod:`.interrupted`: threads whose owner is gone without a clean end; recording
  ``crash_detected`` for them; dismissals (a ``recovery_dismissed`` fact);
- :mod:`.verify_edits` (with :mod:`continuation.toolcalls.patchtext`): compare the files a Write/Edit/MultiEdit/apply_patch
  call targeted with the result its input implies (applied, not applied, diverged);
- :mod:`.before_call`: a "diverged" file that equals the snapshot taken before the call was not
  written by it (not applied);
- :mod:`.reconcile`: the calls waiting for a decision, and recording one (never a retry);
- :mod:`.notices`: the reconciliation prompt and the recovery notice as capsule notices/text;
- :mod:`.session_start`: what a SessionStart (startup / resume) adds: the crash of this thread's
  dead owner, a reconciliation digest, a notice about other interrupted threads;
- :mod:`.cleanup`: temp files left by killed writers.
"""
