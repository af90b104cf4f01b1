"""The timeline page of a thread: ``continuation show --html`` and ``continuation serve``.

- ``model``: what the page shows, aggregated from the store (an outline of the whole thread,
  then one window of turns at a time, a checkpoint's capsule and rewind preview);
- ``shown``: how text reaches the page (clipped, secrets hidden as the CLI hides them);
- ``document``: one self-contained HTML file (inline CSS and script, no network);
- ``server``: the read-only live view on 127.0.0.1 behind a token.

The script (``assets/page.js``) renders the same data whether it is embedded in the file or
fetched from the server; docs/timeline.md says what the page shows and how.
"""
