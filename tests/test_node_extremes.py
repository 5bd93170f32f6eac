"""A call path's shortest and longest inclusive and exclusive times (the read's speed,
branch builder): the builder compares a call with its path's extremes only
when the call's histogram bucket is not strictly between the buckets of
the extremes, which it keeps on the node's first cache line. A call in the
bucket of an extreme, just beyond it, must still move it; so must an
exclusive time below zero (a child longer than its caller: clock skew).

A hand-made text trace, one situation: outer() -> mid() -> leaf() root
calls whose durations step through those cases."""
from __future__ import annotations

from ftflame import parse

# (mid's duration, leaf's duration) per root call, ns; outer lasts mid + 500
CALLS = [
    (5000, 1000),  # first: every extreme
    (9000, 1000),  # a new maximum, another bucket
    # the calls below fall strictly between the extremes of one kind: only
    # the other kind's comparison can catch them
    (4990, 500),   # a new minimum in the minimum's bucket (5000 >> 8 == 4990 >> 8)
    (6000, 1000),  # strictly between: moves nothing
    (9100, 3000),  # a new maximum in the maximum's bucket (9000 >> 9 == 9100 >> 9)
    (7000, 8000),  # exclusive -1000: a new exclusive minimum, below zero
    (7000, 7500),  # exclusive -500: between, moves nothing
    (7000, 8010),  # exclusive -1010: a new minimum in -1000's bucket
    (7000, 6999),  # exclusive 1: between
]


def write_trace(path) -> None:
    lines = ["# tracer: function_graph", "#", "# CPU  DURATION                  FUNCTION CALLS",
             "# |     |   |                     |   |   |   |"]

    def us(ns: int) -> str:
        return f"{ns / 1000:>8.3f} us    |  "

    for mid, leaf in CALLS:
        lines += [" 0)               |  outer() {",
                  " 0)               |    mid() {",
                  f" 0) {us(leaf)}    leaf();",
                  f" 0) {us(mid)}  }}",
                  f" 0) {us(mid + 500)}}}"]
    path.write_text("\n".join(lines) + "\n")


def test_extremes_of_each_path(tmp_path):
    trace = tmp_path / "trace.txt"
    write_trace(trace)
    p = parse.read(str(trace))
    want = {
        "outer": (min(m for m, _ in CALLS) + 500, max(m for m, _ in CALLS) + 500, 500, 500),
        "mid": (min(m for m, _ in CALLS), max(m for m, _ in CALLS),
                min(m - lf for m, lf in CALLS), max(m - lf for m, lf in CALLS)),
        "leaf": (min(lf for _, lf in CALLS), max(lf for _, lf in CALLS),
                 min(lf for _, lf in CALLS), max(lf for _, lf in CALLS)),
    }
    assert want["mid"] == (4990, 9100, -1010, 8000)  # the cases above, as meant
    func = p.col("func")
    got = {}
    for row in range(len(func)):
        name = p.funcs[int(func[row])]
        got[name] = tuple(int(p.col(c)[row]) for c in ("incl_min", "incl_max", "excl_min", "excl_max"))
        assert int(p.col("calls")[row]) == len(CALLS)
    assert got == want
