"""function_graph text traces of root calls one line each (a leaf at depth
0): the shape of many root functions, which tests count work per root on."""
from __future__ import annotations

from collections.abc import Iterable

HEADER = ("# tracer: function_graph\n#\n# CPU  DURATION                  FUNCTION CALLS\n"
          "# |     |   |                     |   |   |   |\n")


def line(cpu: int, us: str, name: str) -> str:
    """One leaf call: ' CPU)   US us    |  NAME();'."""
    return f" {cpu})   {us} us    |  {name}();\n"


def trace(lines: Iterable[str]) -> str:
    """The header, then the lines."""
    return HEADER + "".join(lines)
