

def test_a_rewind_warms_the_capsule_stack_in_a_thread_and_the_summary_waits_for_it(monkeypatch):
    """Issue 15: ``rewind`` imports pydantic and the capsule models in a daemon thread while
    git scans the work tree; the main thread's first use of them (the recovery summary) waits
    for that thread, so the two never import the same modules at once."""
    import threading
    import time as _time

    from continuation.rewind import operation

    order = []

    def slow_warm_up():
        order.append(threading.current_thread().name)
        _time.sleep(0.2)
        order.append("warmed")

    monkeypatch.setattr(operation, "_warm_up", slow_warm_up)
    monkeypatch.setattr(operation, "_warming", None)
    operation.warm_up_in_background()
    summary = operation._summary()
    order.append("summary used")
    assert order == ["continuation-warm-up", "warmed", "summary used"]
    assert callable(summary.notices_of)
