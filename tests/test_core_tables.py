"""The C core's tables as they reach the Profile (issue 19, memory and
speed): the node table handed over without a copy, column after column, and
the builder's child-lookup hints giving the same call paths as the node map
in the situations where a hint could mislead it."""
from __future__ import annotations

import numpy as np

from ftflame.model.profile import NODE_COLUMNS, NODE_IRQ
from ftflame.parse import _core
from helpers.events import parse_events
from ftflame.parse import build_events

# Under one parent the children come in a different order each call, the
# same function is entered in task and in interrupt context (two paths with
# one name: a hint naming the function must still match the context), and
# a grandchild path repeats under a sibling of its parent.
SIBLINGS = """
entry 0 100 parent 0
entry 0 100 a 1
exit 0 100 a 1 110 120
entry 0 100 b 1
entry 0 100 c 2
exit 0 100 c 2 135 140
exit 0 100 b 1 130 150
exit 0 100 parent 0 100 200
entry 0 100 parent 0
entry 0 100 b 1
exit 0 100 b 1 310 320
entry 0 100 a 1
entry 0 100 c 2
exit 0 100 c 2 335 340
exit 0 100 a 1 330 350
exit 0 100 parent 0 300 400
entry 0 100 parent 0
entry 0 100 a 1 flags=0x08
exit 0 100 a 1 510 520 flags=0x08
entry 0 100 a 1
exit 0 100 a 1 530 540
entry 0 100 a 1 flags=0x08
exit 0 100 a 1 550 560 flags=0x08
exit 0 100 parent 0 500 600
"""


def paths(p) -> dict:
    """{(path, irq): (calls, inclusive ns)} of every call path."""
    flags, calls, incl = p.col("flags"), p.col("calls"), p.col("incl")
    return {(tuple(p.path(r)), bool(flags[r] & NODE_IRQ)): (int(calls[r]), int(incl[r]))
            for r in range(p.nrows)}


def test_child_paths_whatever_the_order_and_context_of_siblings():
    p = build_events(parse_events(SIBLINGS), source="siblings")
    assert paths(p) == {
        (("parent",), False): (3, 300),
        (("parent", "a"), False): (3, 10 + 20 + 10),
        (("parent", "b"), False): (2, 20 + 10),
        (("parent", "b", "c"), False): (1, 5),
        (("parent", "a", "c"), False): (1, 5),
        (("parent", "a"), True): (2, 20),
    }
    # one row per path: the hints never made a second node for a path
    assert p.nrows == 6


def test_node_table_arrives_column_after_column():
    """Each column a contiguous array (numpy gathers a strided column of a
    125k-row table over the whole table: 0.1 s of a report)."""
    p = build_events(parse_events(SIBLINGS), source="siblings")
    assert p.nodes.shape == (6, len(NODE_COLUMNS))
    assert p.nodes.flags.f_contiguous
    for name in NODE_COLUMNS:
        assert p.col(name).flags.c_contiguous, name
    # depth, the last column, is filled from the parents after the rest
    assert sorted(p.col("depth").tolist()) == [0, 1, 1, 1, 2, 2]


def test_node_table_block_reads_like_bytes():
    """The table is the core's own memory (no bytes copy): it has a length,
    a read-only buffer and compares by content, as bytes did."""
    events = parse_events(SIBLINGS)
    one, two = _core.build_events(events, 20)["nodes"], _core.build_events(events, 20)["nodes"]
    assert not isinstance(one, bytes)
    assert len(one) == 6 * len(NODE_COLUMNS) * 8
    assert one == two and one == bytes(two) and not (one != two)
    view = memoryview(one)
    assert view.readonly and view.nbytes == len(one)
    assert np.frombuffer(one, dtype=np.int64).sum() == np.frombuffer(bytes(two), dtype=np.int64).sum()
    empty = _core.build_events([], 20)["nodes"]
    assert len(empty) == 0 and empty == b""
