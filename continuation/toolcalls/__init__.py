"""What a tool call does, read from its name and arguments: shell or not, retry-safe or not, the
patch it carries, the files it writes. Pure text analysis, beside the store and the workspace."""
