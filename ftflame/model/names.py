"""Names and strings a trace brings (kallsyms function names, the kernel
version, the clock) made safe to print before they enter the Profile.

A trace is data from another machine, and root reads it at a terminal: an
escape sequence in a symbol name (ESC [2J, a window title, an OSC 8 link)
would reach the terminal through the text report or `ftflame diff`, and
through JSON, HTML or folded stacks to whatever shows them. The text reader
already ends a name at a control character; every other source passes its
strings through printable() once, here at the model boundary, so that every
output carries the same visible name."""
from __future__ import annotations


def _escape(c: str) -> str:
    n = ord(c)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


def printable(text: str) -> str:
    """text with every character that is not printable (C0 and C1 controls,
    DEL, format characters such as the bidirectional overrides, separators
    other than the space) written as a visible \\xNN / \\uNNNN escape."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _escape(c) for c in text)
