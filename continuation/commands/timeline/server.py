"""``continuation serve``: the timeline page live, read-only, on 127.0.0.1.

Bound to the loopback address only, on a random free port unless one is given. Every request
carries the token printed in the URL (``t=``), compared in constant time; a request naming
another host (``Host:``, which a rebinding DNS name would) is refused, and so is every method
but GET and HEAD. Each request opens the store, reads and closes it: hooks keep recording
meanwhile, and the page asks ``api/head`` every ``poll_ms`` to refresh when the log grew.

Routes: ``/`` (the page; ``?thread=`` picks the thread), ``api/outline``, ``api/window``
(``lo``, ``hi``), ``api/checkpoint`` (``id``), ``api/search`` (``q``), ``api/head``.
"""
from __future__ import annotations

import hmac
import secrets
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from continuation.commands.timeline import document, model

LOOPBACK = "127.0.0.1"
#: matches the search answers at most (the page says "+" when there were more)
SEARCH_MAX = 500


class NotFound(Exception):
    pass


class TimelineServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, home: str, *, thread: str | None = None, port: int = 0,
                 poll_ms: int = 2000, cwd: str | None = None):
        super().__init__((LOOPBACK, port), _Handler)
        self.home, self.default_thread, self.poll_ms, self.cwd = home, thread, poll_ms, cwd
        self.token = secrets.token_urlsafe(24)
        self._turns: dict[tuple[str, int], list] = {}
        self._turns_lock = threading.Lock()

    def turns_of(self, thread) -> list:
        """The thread's turn outline, read once per length of its log (a page's window and the
        outline both need it; reading it is the larger share of either on a long thread)."""
        key = (thread.key, thread.store.last_seq(thread.key))
        with self._turns_lock:
            found = self._turns.get(key)
        if found is None:
            found = thread.store.turn_outline(thread.key)
            with self._turns_lock:
                if len(self._turns) >= 8:
                    self._turns.pop(next(iter(self._turns)))
                self._turns[key] = found
        return found

    @property
    def port(self) -> int:
        return self.server_address[1]

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}/?t={self.token}"

    def engine(self):
        from continuation.session.engine import Engine

        return Engine(self.home)

    def thread_of(self, engine, selector: str | None):
        return engine.select(selector or self.default_thread, cwd=self.cwd)


class _Handler(BaseHTTPRequestHandler):
    server: TimelineServer
    server_version = "continuation-serve"
    sys_version = ""

    def log_message(self, format, *args):  # no access log: the terminal shows the URL only
        return

    def _refuse(self, code: int, message: str) -> None:
        self._send(code, "text/plain; charset=utf-8", (message + "\n").encode())

    def _send(self, code: int, kind: str, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("X-Frame-Options", "DENY")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _allowed(self, query: dict) -> bool:
        host = (self.headers.get("Host") or "").strip().lower()
        if host not in (f"{LOOPBACK}:{self.server.port}", f"localhost:{self.server.port}"):
            self._refuse(403, "this server answers on its loopback address only")
            return False
        given = (query.get("t") or [""])[0]
        if not hmac.compare_digest(given.encode(), self.server.token.encode()):
            self._refuse(403, "the token is missing or wrong: open the URL `continuation serve` printed")
            return False
        return True

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        if not self._allowed(query):
            return
        arg = lambda name: (query.get(name) or [None])[0]  # noqa: E731
        try:
            if parts.path == "/":
                self._page(arg("thread"))
            elif parts.path.startswith("/api/"):
                self._json(self._api(parts.path[len("/api/"):], arg))
            else:
                self._refuse(404, "no such page")
        except NotFound as exc:
            self._json({"error": str(exc)}, 404)
        except (ValueError, LookupError) as exc:
            self._json({"error": str(exc)}, 400 if isinstance(exc, ValueError) else 404)
        except Exception as exc:  # the server goes on; the page says the read failed
            from continuation.store import StoreError

            if isinstance(exc, StoreError):
                self._json({"error": str(exc)}, 404)
                return
            sys.stderr.write(f"continuation serve: {type(exc).__name__}: {exc}\n")
            self._json({"error": f"{type(exc).__name__}: {exc}"}, 500)

    def _page(self, selector: str | None) -> None:
        with self.server.engine() as engine:
            thread = self.server.thread_of(engine, selector)
            data = document.live_data(engine, thread, self.server.token,
                                      poll_ms=self.server.poll_ms,
                                      turns=self.server.turns_of(thread))
        body = document.render(data, live=True).encode("utf-8")
        self._send(200, "text/html; charset=utf-8", body)

    def _json(self, data, code: int = 200) -> None:
        self._send(code, "application/json", document.json_text(data).encode("ascii"))

    def _api(self, name: str, arg):
        with self.server.engine() as engine:
            thread = self.server.thread_of(engine, arg("thread"))
            if name == "head":
                return {"thread": thread.key, "last_seq": thread.store.last_seq(thread.key)}
            if name == "outline":
                return model.outline(engine, thread, self.server.turns_of(thread))
            if name == "window":
                lo, hi = _int(arg("lo"), "lo"), _int(arg("hi"), "hi")
                if hi < lo or hi - lo > 10 * model.PAGE_EVENTS_MAX:
                    raise ValueError("a window is lo..hi with hi >= lo, at most a few pages long")
                return model.window(thread, lo, hi, self.server.turns_of(thread))
            if name == "checkpoint":
                return model.checkpoint_detail(engine, thread, arg("id") or "")
            if name == "search":
                q = (arg("q") or "")[:200]
                found = thread.store.events_matching(thread.key, q, SEARCH_MAX + 1)
                return {"matches": sorted(found[:SEARCH_MAX]), "more": len(found) > SEARCH_MAX}
        raise NotFound(f"no such call: api/{name}")


def _int(value, name: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a whole number") from None
