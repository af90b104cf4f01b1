"""What the model stand-ins share: serving a handler on 127.0.0.1 in a background thread, and
their JSON-lines request log (written and read back)."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class BackgroundServer:
    """Serve ``handler`` on 127.0.0.1 (``port`` 0: any free one) in a daemon thread; a context
    manager that starts it on enter and shuts it down on exit."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], *, port: int = 0, name: str) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(target=self.httpd.serve_forever, name=name, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=10)


def append_log(log_path: Path, lock: threading.Lock, method: str, path: str, body: Any) -> None:
    """Log one request as a JSON line (under ``lock``: the server answers on several threads)."""
    record = json.dumps({"method": method, "path": path, "body": body}, ensure_ascii=False)
    with lock, Path(log_path).open("a", encoding="utf-8") as fh:
        fh.write(record + "\n")


def read_log(log_path: Path) -> list[dict[str, Any]]:
    """The logged requests, in order (a torn last line, if the server died mid-write, is skipped)."""
    records = []
    if not Path(log_path).exists():
        return records
    for line in Path(log_path).read_text(encoding="utf-8").splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            continue
    return records
