"""A slow, obviously-correct pure-Python parser of the function_graph text
dialects, used only by the parity tests against the C tokenizer
(parse/core/reader_text.c). It shares no code with it: regular expressions
per line, plain lists for stacks.

parse_events(lines, mode) returns the events the C tokenizer must feed the
builder, in order: (kind, cpu, pid, func, depth, calltime, rettime, flags)
for calls, (kind, cpu) for the rest. build(events) aggregates them the way the
C builder does for text (per-task stacks, irq roots by name or flag, partial
and orphan calls), into {path: [calls, incl, excl]}.
"""
from __future__ import annotations

import collections
import re

ENTRY, EXIT, SWITCH, LOST, LEAF, OTHER = 1, 2, 3, 4, 5, 0
RENAME = 100  # not a builder event: a task of unknown pid got its pid
HARDIRQ, SOFTIRQ, NMI = 0x08, 0x10, 0x40
MAX_DEPTH = 4096

DUR = r"(?:[+!#*@$]\s+)?\d+(?:\.\d+)?\s*(?:us|ns|ms|s)"
UNITS = {"ns": 1, "us": 1000, "ms": 1000000, "s": 1000000000}
LAT = r"[.dDXnNpPbBLhHsSzZ0-9]{3,8}"

KERNEL = re.compile(
    r"^\s*(?:(?P<ts>\d+\.\d+)\s*\|\s*)?(?:(?P<cpu>\d{1,4})\)\s+)?"
    r"(?:(?P<proc>[^|]*?-\d+)\s*\|\s*)?(?:(?P<lat>" + LAT + r")\s*\|\s*)?"
    r"(?P<dur>" + DUR + r")?\s*\|(?P<body>.*)$")
ARROW = re.compile(r"^\s*(?:\d+\.\d+\s*\|\s*)?(?:\d{1,4}\)\s+)?(?:[^|]*?-\d+\s*\|\s*)?"
                   r"(?P<arrow>==========>|<==========)\s*\|")
SEPARATOR = re.compile(r"^\s*(?P<cpu>\d{1,4})\)\s+(?P<prev>.+?-\d+)\s+=>\s+(?P<next>\S+-\d+)\s*$")
LOSTLINE = re.compile(r"^\s*CPU:(?P<cpu>\d+) \[(?:LOST (?:(?P<a>\d+) )?EVENTS|(?:(?P<b>\d+) )?EVENTS DROPPED)\]")
OVERRUN = re.compile(r"^\s*\(Overruns: (\d+)")
TRACECMD = re.compile(
    r"^\s*(?P<comm>.*?)-(?P<pid>\d+)\s+(?:\[(?P<cpu>\d+)\](?:\s+(?P<flags>" + LAT + r"))?"
    r"|(?P<lcpu>\d+)(?P<lflags>" + LAT + r")?)\s+(?P<ts>\d+\.\d+):\s+(?P<event>[^\s:]+):(?P<payload>.*)$")
GRAPH = re.compile(r"^\s*(?P<dur>" + DUR + r")?\s*\|(?P<body>.*)$")
RAW = re.compile(r"^\s*func=(?P<name>\S+) depth=(?P<depth>\d+)(?: overrun=(?P<ov>\d+))?"
                 r"(?: calltime=(?P<ct>[0-9a-fx]+) rettime=(?P<rt>[0-9a-fx]+))?")
FMT = re.compile(r"^\s*(?:-->|<--) (?P<name>\S+) \((?P<depth>\d+)\)"
                 r"(?: \(start: (?P<ct>[0-9a-fx]+)\s+end: (?P<rt>[0-9a-fx]+)\))?")
BODY_EXIT = re.compile(r"^(?P<ind> *)\}(?P<rest>.*)$")
BODY_CALL = re.compile(r"^(?P<ind> *)(?P<name>[^\s(){};|]+)(?: \[[^\]]*\])?\s*\((?P<args>.*)\)"
                       r"\s*(?:/\*.*?\*/\s*)*(?P<kind>[{;])(?P<rest>.*)$")
TAIL = re.compile(r"^\s*/\*\s*(?P<name>[^\s*]+)")
DEPTH = re.compile(r"\((\d+)\)")
SWITCH_KV = re.compile(r"prev_pid=(\d+).*==>.*next_pid=(\d+)")
SWITCH_PLUGIN = re.compile(r":(\d+) \[-?\d+\].*==>.*:(\d+) \[")
MAIL_RECORD = re.compile(
    r"(?:(?<=\s)|^)(?:(?P<ts>\d+\.\d+)\s*\|\s*)?(?P<cpu>\d{1,4})\)\s+(?:(?P<proc>\S+-\d+)\s*\|\s*)?"
    r"(?P<dur>" + DUR + r")?\s*\|\s*(?P<body>\}(?:\s*/\*.*?\*/)?"
    r"|[^\s(){};|]+(?: \[[^\]]*\])?\s*\([^)]*\)\s*(?:/\*.*?\*/\s*)*[{;](?:\s*/\*.*?\*/)*)")


SP = " \t\r\f\v"
PEND_MAX = 4096  # longest line not understood that a next line may continue
JOIN_MAX = 1 << 20  # longest mail line rebuilt from wrapped lines


def is_header(line: str) -> bool:
    s = line.strip()
    return s.startswith("#") or bool(re.fullmatch(r"-{4,}", s)) or s.startswith(("cpus=", "version =")) \
        or (s.startswith("CPU ") and not s.startswith("CPU:"))


def starts_record(line: str, mail: bool) -> bool:
    """The line begins with a record's own prefix: the CPU column or an
    abstime; in line mode also a duration, an overhead mark or the graph's
    `|` (reader_text.c starts_record)."""
    q = line.lstrip(SP)
    if not q:
        return False
    if q[0] == "|" or (q[0] in "+!#*@$" and len(q) > 1 and q[1] in SP):
        return not mail
    digits = re.match(r"\d+", q)
    if not digits:
        return False
    rest = q[digits.end():]
    if rest.startswith(")"):
        return digits.end() <= 4 and (len(rest) == 1 or rest[1] in SP)
    ts = re.match(r"\d{1,11}\.\d{1,9}(?!\d)", q)
    if not rest.startswith(".") or not ts or digits.end() > 11:
        return False
    x = q[ts.end():].lstrip(SP)
    return x.startswith("|") or (not mail and x.startswith(("us", "ns", "ms", "s")))


def duration_ns(text: str) -> int:
    """'+ 14.904 us' -> 14904: integer arithmetic, truncating past 9 digits."""
    text = text.strip()
    if text[0] in "+!#*@$":
        text = text[1:].strip()
    m = re.match(r"(\d+)(?:\.(\d+))?\s*(\w+)$", text)
    unit = UNITS[m.group(3)]
    frac = (m.group(2) or "")[:9]
    return int(m.group(1)) * unit + (int(frac) * unit // 10 ** len(frac) if frac else 0)


def ts_ns(text: str) -> int:
    sec, frac = text.split(".")
    return int(sec) * 1000000000 + int(frac.ljust(9, "0"))


def lat_flags(tok) -> int:
    if not tok or len(tok) < 3:
        return 0
    return {"h": HARDIRQ, "H": HARDIRQ, "s": SOFTIRQ, "z": NMI, "Z": NMI}.get(tok[2], 0)


class Stack:
    def __init__(self, pid):
        self.pid = pid
        self.funcs = []  # open function per depth (None: unknown)
        self.overrun = 0


class Parser:
    def __init__(self, mail: bool = False):
        self.mail = mail
        self.events = []
        self.stacks = {}  # pid key -> Stack (aliases share one)
        self.cpu_stack = {}  # cpu -> Stack of the task running there
        self.named = set()
        self.irq = collections.Counter()
        self.last_stack = None
        self.unparsed = []
        self.counts = collections.Counter()
        self.pending = None  # (line, number): not understood, may be continued
        self.join = None  # mail: the line being rebuilt from wrapped lines
        self.overruns = {}  # index in events -> overrun= of a trace-cmd -R exit

    # ---- stacks ---------------------------------------------------------
    @staticmethod
    def key(pid, cpu):
        return ("idle", cpu) if pid == 0 else pid

    def of_pid(self, pid, cpu):
        k = self.key(pid, cpu)
        if k not in self.stacks:
            self.stacks[k] = Stack(pid)
        return self.stacks[k]

    def of_cpu(self, cpu):
        if cpu not in self.cpu_stack:
            self.cpu_stack[cpu] = Stack(-1 - cpu)
        return self.cpu_stack[cpu]

    # ---- lines ------------------------------------------------------------
    def line(self, line: str, lineno: int) -> None:
        line = line.rstrip("\r")
        if self.mail:
            self.mail_line(line)
            return
        if self.understood(line):
            self.pending_unparsed()
            return
        # a line a mail client wrapped: the one before, not understood
        # either, and this one (no record prefix of its own) as one line
        if self.pending and not starts_record(line, mail=False):
            if self.understood(self.pending[0] + " " + line):
                self.pending = None
                return
        self.pending_unparsed()
        if len(line) > PEND_MAX:
            self.unparsed.append(lineno)
        else:
            self.pending = (line, lineno)

    def pending_unparsed(self):
        if self.pending:
            self.unparsed.append(self.pending[1])
        self.pending = None

    def understood(self, line: str) -> bool:
        s = line.strip()
        if is_header(line) or not s:
            return True
        m = LOSTLINE.match(line)
        if m:
            self.events.append((LOST, int(m.group("cpu"))))
            return True
        m = OVERRUN.match(line)
        if m:
            if self.last_stack and int(m.group(1)) > self.last_stack.overrun:
                self.last_stack.overrun = int(m.group(1))
            return True
        return self.kernel_line(line) or self.tracecmd_line(line)

    def mail_line(self, line: str) -> None:
        """Mail: a line with no record prefix of its own continues the line
        before it (a mail client wrapped it); blank lines end a paragraph."""
        if not line.strip(SP):
            self.mail_flush()
            return
        m = LOSTLINE.match(line)
        if m or OVERRUN.match(line):
            self.mail_flush()
            if m:
                self.events.append((LOST, int(m.group("cpu"))))
            return
        header = is_header(line)
        if self.join is not None and not header and not starts_record(line, mail=True) \
                and len(self.join) + 1 + len(line) <= JOIN_MAX:
            self.join += " " + line
            return
        self.mail_flush()
        self.join = line

    def mail_flush(self):
        if self.join is None:
            return
        for m in MAIL_RECORD.finditer(self.join):
            cpu = int(m.group("cpu"))
            body = m.group("body")
            self.call(cpu, None, ts_ns(m.group("ts")) if m.group("ts") else None,
                      duration_ns(m.group("dur")) if m.group("dur") else None, body, 0, None)
        self.join = None

    def finish(self):
        if self.mail:
            self.mail_flush()
        else:
            self.pending_unparsed()

    def kernel_line(self, line: str) -> bool:
        m = ARROW.match(line)
        if m:
            cpu = re.match(r"^\s*(?:\d+\.\d+\s*\|\s*)?(\d+)\)", line)
            cpu = int(cpu.group(1)) if cpu else 0
            if m.group("arrow") == "==========>":
                self.irq[cpu] = min(self.irq[cpu] + 1, 64)
            else:
                self.irq[cpu] = max(self.irq[cpu] - 1, 0)
            return True
        m = KERNEL.match(line)
        if m:
            body = m.group("body")
            if not (BODY_EXIT.match(body.lstrip()) or BODY_CALL.match(body.lstrip())
                    or body.lstrip().startswith("/*")):
                return False
            cpu = int(m.group("cpu") or 0)
            pid = None
            if m.group("proc"):
                pid = int(m.group("proc").rsplit("-", 1)[1])
            ts = ts_ns(m.group("ts")) if m.group("ts") else None
            dur = duration_ns(m.group("dur")) if m.group("dur") else None
            self.call(cpu, pid, ts, dur, body, lat_flags(m.group("lat")), None)
            return True
        m = SEPARATOR.match(line)
        if m:
            self.separator(int(m.group("cpu")), int(m.group("prev").rsplit("-", 1)[1]),
                           int(m.group("next").rsplit("-", 1)[1]))
            return True
        return False

    def separator(self, cpu, prev, nxt):
        cur = self.of_cpu(cpu)
        k = self.key(prev, cpu)
        if cpu not in self.named:
            self.named.add(cpu)
            known = self.stacks.get(k)
            if known is None or (known is not cur and not cur.funcs):
                if cur.pid != prev:
                    self.events.append((RENAME, cpu, cur.pid, prev))
                    cur.pid = prev
                if known is None:
                    self.stacks[k] = cur
        self.cpu_stack[cpu] = self.of_pid(nxt, cpu)
        self.irq[cpu] = 0

    def tracecmd_line(self, line: str) -> bool:
        m = TRACECMD.match(line)
        if not m:
            return False
        pid = int(m.group("pid"))
        cpu = int(m.group("cpu") if m.group("cpu") is not None else m.group("lcpu"))
        flags = lat_flags(m.group("flags") or m.group("lflags"))
        ts = ts_ns(m.group("ts"))
        event, payload = m.group("event"), m.group("payload")
        if event in ("funcgraph_entry", "funcgraph_exit", "fgraph_retaddr_entry"):
            r = RAW.match(payload) or FMT.match(payload)
            if r:
                name, depth = r.group("name"), int(r.group("depth"))
                st = self.of_pid(pid, cpu)
                self.last_stack = st
                if event != "funcgraph_exit":
                    self.entry(st, cpu, name, depth, ts, flags)
                else:
                    ct, rt = int(r.group("ct"), 16), int(r.group("rt"), 16)
                    del st.funcs[depth:]
                    if r.groupdict().get("ov") is not None:
                        self.overruns[len(self.events)] = int(r.group("ov"))
                    self.events.append((EXIT, cpu, st.pid, name, depth, ct, rt, flags))
                return True
            g = GRAPH.match(payload)
            if not g:
                return False
            body = g.group("body")
            is_exit = bool(BODY_EXIT.match(body.lstrip()))
            if is_exit != (event == "funcgraph_exit") or not (is_exit or BODY_CALL.match(body.lstrip())):
                return False
            self.call(cpu, pid, ts, duration_ns(g.group("dur")) if g.group("dur") else None,
                      body, flags, True)
            return True
        if event == "sched_switch":
            s = SWITCH_KV.search(payload) or SWITCH_PLUGIN.search(payload)
            if s:
                self.events.append((SWITCH, cpu))
                return True
        self.events.append((OTHER, cpu))
        return True

    # ---- records ------------------------------------------------------------
    def call(self, cpu, pid, ts, dur, body, flags, tracecmd):
        if body.lstrip().startswith("/*"):
            self.events.append((OTHER, cpu))
            return
        if pid is not None:
            st = self.of_pid(pid, cpu)
            if not tracecmd:
                self.cpu_stack[cpu] = st
                self.named.add(cpu)
        else:
            st = self.of_cpu(cpu)
        self.last_stack = st
        if self.irq[cpu] > 0:
            flags |= HARDIRQ
        stripped = body if not self.mail else " " + body
        indent = len(stripped) - len(stripped.lstrip(" "))
        indent = (indent - 2) // 2 if indent >= 2 else 0
        mx = BODY_EXIT.match(stripped.lstrip()) if True else None
        mc = BODY_CALL.match(stripped.lstrip())
        rest = (mx or mc).group("rest")
        explicit = None
        if tracecmd:
            tail = re.sub(r"/\*.*?\*/", "", rest)
            d = DEPTH.search(tail)
            if d:
                explicit = int(d.group(1))
        if explicit is not None:
            depth = explicit
        elif not self.mail:
            depth = indent
        elif mx:
            depth = max(len(st.funcs) - 1, 0)
        else:
            depth = len(st.funcs)
        if depth >= MAX_DEPTH:
            return
        dur = dur or 0
        t = ts or 0
        if mc and mc.group("kind") == "{":
            name = mc.group("name")
            self.entry(st, cpu, name, depth, t, flags)
        elif mc:
            del st.funcs[depth:]
            self.events.append((LEAF, cpu, st.pid, mc.group("name"), depth, t, t + dur, flags))
        else:
            tail = TAIL.match(rest)
            name = None
            if tail and not tail.group("name").startswith(("=", "<", "ret=")):
                name = tail.group("name")
            open_func = st.funcs[depth] if depth < len(st.funcs) else None
            if name is None:
                name = open_func or "(unknown)"
            del st.funcs[depth:]
            rt = t if t >= dur else dur
            self.events.append((EXIT, cpu, st.pid, name, depth, rt - dur, rt, flags))

    def entry(self, st, cpu, name, depth, ts, flags):
        while len(st.funcs) < depth:
            st.funcs.append(None)
        del st.funcs[depth:]
        st.funcs.append(name)
        self.events.append((ENTRY, cpu, st.pid, name, depth, 0, 0, flags))


def parse_events(text: str, mail: bool = False):
    """All events of a text trace, and the line numbers not understood."""
    events, unparsed, _ = parse_events_overruns(text, mail)
    return events, unparsed


def parse_events_overruns(text: str, mail: bool = False):
    """parse_events(), and {index of an exit event: its overrun counter}
    (trace-cmd report -R prints it on every exit; the builder's gap rules
    read it, the tokenizer parity does not)."""
    p = Parser(mail)
    for i, line in enumerate(text.split("\n"), 1):
        p.line(line, i)
    p.finish()
    return p.events, p.unparsed, p.overruns


# ---- the call builder, as the C one does it for text --------------------

IRQ_EXACT = {"irq_enter_rcu", "irq_enter", "irq_exit_rcu", "irq_exit", "__irq_exit_rcu", "do_IRQ",
             "handle_softirqs", "__do_softirq", "do_softirq", "smp_apic_timer_interrupt",
             "common_interrupt", "__common_interrupt", "asm_common_interrupt"}
IRQ_PREFIX = ("__sysvec_", "sysvec_", "asm_sysvec_", "smp_irq_work_interrupt")


def is_irq_name(name: str) -> bool:
    return name in IRQ_EXACT or name.startswith(IRQ_PREFIX)


class Frame:
    def __init__(self, path, func, depth, irq, lparent):
        self.path, self.func, self.depth, self.irq, self.lparent = path, func, depth, irq, lparent
        self.child_incl = 0
        self.desc = 0  # completed calls inside, same context (irq subtrees apart)
        self.irq_roots = 0  # interrupt subtrees inside (through same-context calls)
        self.irq_time = 0  # their time
        self.gap = False  # its interval holds something the trace does not show
        self.kids = []  # its completed direct children (Calls)


class Call:
    """One completed call, as the reference for per-call figures needs it
    (tests/helpers/callref.py): the overhead model works per call from these."""
    __slots__ = ("path", "dur", "excl", "desc", "irq_roots", "irq_time", "irq", "irq_root", "gap",
                 "in_gap_root", "parent_out")

    def __init__(self, path, dur, excl, desc, irq_roots, irq_time, irq, irq_root, gap=False):
        self.path, self.dur, self.excl, self.desc = path, dur, excl, desc
        self.irq_roots, self.irq_time, self.irq, self.irq_root = irq_roots, irq_time, irq, irq_root
        # gap: the call's own interval holds a gap (lost events on the CPU
        # its task last ran on, an overrun, a lost exit or entry below it);
        # in_gap_root: it is under a root call that has one or never ended
        # parent_out: its caller's call spans a gap or never completed (a
        # kept call under it is a tree of its own: its time is in no kept
        # caller's)
        self.gap, self.in_gap_root, self.parent_out = gap, False, False


class TaskStack(list):
    """A task's open frames, and what the gap rules read of the task."""

    def __init__(self):
        super().__init__()
        self.cpu = None  # the CPU of its last call event
        self.overrun = None  # the overrun counter of its last exit
        self.root_calls = []  # the calls completed under its open root call


def taint(stack) -> None:
    """Something the trace does not show happened while these frames were
    open: it is inside each of their intervals."""
    for f in stack:
        f.gap = True


def frames_out(frames) -> None:
    """These frames never complete: their completed children have no caller
    in the statistics."""
    for f in frames:
        for k in f.kids:
            k.parent_out = True


def root_over(stack, gap: bool) -> None:
    """The task's root call ended (gap: it spans a gap, or never completed)."""
    for c in stack.root_calls:
        c.in_gap_root = gap
    stack.root_calls = []


# the reference tree builder, written as one state machine on purpose: it
# must read as the independent check of parse/core/builder.c it is
def build(events, calls=None):  # noqa: C901
    """{path tuple: [calls, incl, excl]} and {function: [calls, incl]}.
    With a list as `calls`, every completed call is appended to it as a Call
    (orphan exits too, as one-call '(partial)' paths), in completion order,
    with whether its interval holds a gap."""
    paths = collections.defaultdict(lambda: [0, 0, 0])
    funcs = collections.defaultdict(lambda: [0, 0])
    tasks = collections.defaultdict(TaskStack)

    def pop_lost(stack, depth):
        """Pop the frames at or below `depth` whose exits never came: the
        lost exits are inside the intervals of the frames that stay."""
        popped = False
        while stack and stack[-1].depth >= depth:
            frames_out([stack.pop()])
            popped = True
        if popped:
            taint(stack)
            if not stack:
                root_over(stack, True)

    def add(path, func, dur, excl):
        paths[path][0] += 1
        paths[path][1] += dur
        paths[path][2] += excl
        funcs[func][0] += 1
        funcs[func][1] += dur

    def complete_top(stack, dur):
        f = stack.pop()
        parent = stack[-1] if stack else None
        if parent and f.irq and not parent.irq and f.lparent < len(stack) - 1:
            parent = stack[f.lparent]
        # an interrupt subtree starts under a task-context frame (a top-level
        # irq call is a root in irq context, not an interrupted call's subtree)
        irq_root = bool(f.irq and parent and not parent.irq)
        if parent:
            parent.child_incl += dur
            if f.gap:  # its interval is inside its caller's
                parent.gap = True
            if f.irq and not parent.irq:  # an interrupt subtree inside parent
                parent.irq_roots += 1
                parent.irq_time += dur
            else:
                parent.desc += 1 + f.desc
                parent.irq_roots += f.irq_roots
                parent.irq_time += f.irq_time
        add(f.path, f.func, dur, dur - f.child_incl)
        call = Call(f.path, dur, dur - f.child_incl, f.desc, f.irq_roots, f.irq_time, f.irq, irq_root, f.gap)
        for k in f.kids:
            k.parent_out = f.gap
        if parent:
            parent.kids.append(call)
        if calls is not None:
            calls.append(call)
        if stack:
            stack.root_calls.append(call)
        else:
            root_over(stack, f.gap)

    def entry(stack, func, depth, flags):
        top = stack[-1] if stack else None
        own_irq = bool(flags & (HARDIRQ | SOFTIRQ | NMI)) or is_irq_name(func)
        lparent = len(stack) - 1
        if top and own_irq and not top.irq:
            if depth <= top.depth:
                i = len(stack)
                while i > 0 and stack[i - 1].depth >= depth:
                    i -= 1
                if i > 0:
                    lparent = i - 1
        elif top and depth <= top.depth:
            pop_lost(stack, depth)
            lparent = len(stack) - 1
        elif top and depth > top.depth + 1 and not (depth == top.depth + 2 and top.irq and is_irq_name(func)):
            taint(stack)  # the entries between were never written
        # context: own, or inherited from the frame the call is placed under
        parent_irq = lparent >= 0 and stack[lparent].irq
        irq = own_irq or parent_irq
        # the context is part of the path: a function entered in task and in
        # irq context is two paths; " [irq]" marks where irq context starts
        name = func + " [irq]" if irq and not parent_irq else func
        if lparent >= 0:
            path = stack[lparent].path + (name,)
        elif depth > 0:
            path = ("(partial)", name)
        else:
            path = (name,)
        stack.append(Frame(path, func, depth, irq, lparent))

    for ev in events:
        kind = ev[0]
        if kind == LOST:  # the tasks last seen on that CPU may have lost events
            for stack in tasks.values():
                if stack.cpu == ev[1]:
                    taint(stack)
            continue
        if kind == RENAME:
            _, cpu, old, new = ev
            old_stack = tasks.pop(("idle", cpu) if old == 0 else old, TaskStack())
            new_key = ("idle", cpu) if new == 0 else new
            if new_key not in tasks or not tasks[new_key]:
                tasks[new_key] = old_stack
            continue
        if kind not in (ENTRY, EXIT, LEAF):
            continue
        _, cpu, pid, func, depth, calltime, rettime, flags = ev
        stack = tasks[("idle", cpu) if pid == 0 else pid]
        stack.cpu = cpu
        dur = max(rettime - calltime, 0)
        # (an overrun that grew says the kernel's return stack was full: the
        # calls below were never recorded and the frames open are whole, so
        # it is no gap; the counter is not read)
        if kind == ENTRY:
            entry(stack, func, depth, flags)
        elif kind == LEAF:
            entry(stack, func, depth, flags)
            complete_top(stack, dur)
        else:
            i = len(stack)
            while i > 0:
                f = stack[i - 1]
                if f.func == func and f.depth == depth:
                    break
                if f.depth < depth:
                    i = 0
                    break
                i -= 1
            if i > 0:
                if i < len(stack):  # exits lost above the matching frame
                    frames_out(stack[i:])
                    del stack[i:]
                    taint(stack)
                complete_top(stack, dur)
            else:
                # an exit without its entry: the entry was lost while the
                # frames left open were open
                pop_lost(stack, depth)
                taint(stack)
                irq = flags & (HARDIRQ | SOFTIRQ | NMI)
                path = ("(partial)", func + " [irq]" if irq else func)
                add(path, func, dur, dur)
                if calls is not None:
                    calls.append(Call(path, dur, dur, 0, 0, 0, bool(irq) or is_irq_name(func), False, True))
    for stack in tasks.values():  # root calls open at the end never complete
        if stack:
            frames_out(stack)
            root_over(stack, True)
    return dict(paths), dict(funcs)
