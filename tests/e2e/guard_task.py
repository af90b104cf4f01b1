"""The one-requirement task the recovery loop's real-runtime tests give a stand-in model: a
function with its unittest, written wrong first (the check fails) and right once the loop's
summary reached the model."""
from __future__ import annotations

import shlex

from continuation.prove.tasks import Requirement, Task, function_source, unittest_source

REQ = Requirement(1, "function", module=0, spec="f_1(x) returns 3 * x + 2", correct="3 * x + 2",
                  wrong="3 * x + 3", cases=[(0, 2), (4, 14)])
TASK = Task("e2e-guard", 38, 1, [REQ], [[1]])
PROMPT = "implement f_1 in pkg/mod_0.py with its test: f_1(x) returns 3 * x + 2"


def module_text(body: str) -> str:
    """pkg/mod_0.py with ``body`` as f_1's expression."""
    return f'"""Module 0 of {TASK.name}."""\n\n\n' + function_source(REQ, body)


def write_command(body: str) -> str:
    """One shell command writing the module and its test."""
    return (f"printf %s {shlex.quote(module_text(body))} > {REQ.module_path} && "
            f"printf %s {shlex.quote(unittest_source(REQ))} > {REQ.test_path}")
