"""Where reports go: files written safely (ftflame runs as root on NFS
servers), stdout, terminating signals, and the progress line on stderr.

The rules for `-o OUT` (README "Outputs", `ftflame report --help`):
  * a new or regular file is written to a temporary file beside it, then
    renamed over it: a reader never sees half a report, a failure or a
    terminating signal leaves nothing behind. A new file gets 0666 minus the
    umask; a replaced file keeps its mode and its owner and group (root
    replacing a user's file), or, when they cannot be kept, loses its
    set-user-ID and set-group-ID bits.
  * an existing file that is not a regular file (a device, a FIFO, a
    terminal) is written in place: renaming over it would replace the node.
    A FIFO without a reader is waited for, and stderr says so.
  * a symbolic link is replaced by the report; what it points to is never
    written through (root following a link planted in a shared directory is
    the classic way to clobber a system file). A link to a device, FIFO or
    terminal, or to an open file descriptor (/dev/stdout ->
    /proc/self/fd/1, whatever fd 1 is), is refused: replacing it would
    break the system's link, following it could write onto a disk.
  * the output's directory is opened a component at a time (open_parent):
    a symbolic link on the way is followed only when root or the user
    running ftflame owns it; a link another user made (a shared or
    another user's directory) is refused, since root would write wherever
    that user points it. Nothing is looked up by path after the checks.
  * the temporary file is .ftflame-HOST-PID-RANDOM; a SIGKILL (which
    nothing catches) leaves it, and the next write into that directory
    removes those of this machine whose process is gone, owned by the
    user writing (clean_stale_temps).
  * every write checks its count (write_all): a disk filling up ends the
    command with one line and exit 2, the previous file left as it was;
    stdout the same. Lines on stderr go through say(): control characters
    shown as escapes, and a stderr that cannot be written loses the line,
    never the exit code.
  * an output that is one of the command's inputs is refused: a file named
    on the command line, stdin's file ('-'), or one read beside a trace
    (a run directory's calibration.json and meta.json), existing or not.
Imported by the CLI and by calibration.py; it imports nothing of ftflame's
but errors and names, so it sits below both.
"""
from __future__ import annotations

import contextlib
import errno
import io
import os
import shutil
import signal
import stat
import sys
import time
from collections.abc import Iterable
from typing import Callable, Union

from ftflame.model.errors import InputError
from ftflame.model.names import printable

TEMP_PREFIX = ".ftflame-"
# the signals that end ftflame: each one's handler raises Terminated, so the
# same `except BaseException` that cleans up after an error cleans up after it
TERMINATING = (signal.SIGTERM, signal.SIGHUP)
Data = Union[str, Callable]


class Terminated(BaseException):
    """A terminating signal (SIGTERM, SIGHUP) arrived; exit 128 + signum."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


def _raise_terminated(signum, frame):
    raise Terminated(signum)


@contextlib.contextmanager
def terminating_signals_raise():
    """SIGTERM and SIGHUP raise Terminated in the main thread while inside
    (not a signal already ignored, e.g. SIGHUP under nohup); the previous
    handlers come back after."""
    previous = {}
    for s in TERMINATING:
        old = signal.getsignal(s)
        if old is not signal.SIG_IGN:
            previous[s] = signal.signal(s, _raise_terminated)
    try:
        yield
    finally:
        for s, old in previous.items():
            signal.signal(s, old)


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _place(path: str) -> str:
    """Where writing `path` puts a file: its directory resolved, its own
    name not (a link there is replaced, not followed)."""
    a = os.path.abspath(path)
    return os.path.join(os.path.realpath(os.path.dirname(a)), os.path.basename(a))


def refuse_input_as_output(output: str | None, inputs: Iterable[str | None],
                           beside: Iterable[str] = ()) -> None:
    """InputError when writing `output` would destroy one of `inputs` (the
    files named, stdin's file for '-') or of `beside` (the files read beside
    a trace when there: calibration.json, whether it exists yet or not).
    The same file by device and inode (another name, a hard link) or by
    place. An output that is a symbolic link is replaced, not written
    through, so a link to an input is no danger; a link into /proc (an open
    file's descriptor) is refused here, before anything is read, and so is
    a report for a closed stdout."""
    if output is None or output == "-":  # (a tuple test does not narrow the type for mypy)
        if 1 in CLOSED_STREAMS:
            raise _stdout_closed()
        return
    try:
        out = os.lstat(output)
    except OSError:
        out = None  # not there yet (or unreadable: write_atomic says so)
    if out is not None and stat.S_ISLNK(out.st_mode):
        _refuse_link_into_proc(output)
        return
    place = _place(output)
    for path in inputs:
        if path is not None and _same_input(path, out, place):
            what = "the input on stdin" if path == "-" else f"the input {path}"
            raise InputError(output, f"is {what}: writing would destroy it", "give another output file")
    for path in beside:
        if _same_input(path, out, place):
            raise InputError(output, f"is {path}, which this command reads beside the trace: writing "
                             "it would change what every later command reads there", "give another output file")


def _same_input(path: str, out: os.stat_result | None, place: str) -> bool:
    if path != "-" and os.path.realpath(path) == place:
        return True
    try:
        return out is not None and _same_file(os.fstat(0) if path == "-" else os.stat(path), out)
    except OSError:  # not there, or stdin closed
        return False


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class _CheckedRaw(io.RawIOBase):
    """A file descriptor whose every write is checked to be whole: a write
    the kernel cut short (a disk filling up takes the first 64 KiB and
    refuses the rest) is carried on, and one that takes nothing raises,
    where a bare BufferedWriter.write returns the short count and leaves
    the report silently cut."""

    def __init__(self, fd: int, closefd: bool):
        super().__init__()
        self.fd = fd
        self.closefd = closefd

    def close(self) -> None:
        if not self.closed and self.closefd:
            os.close(self.fd)
        super().close()

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.fd

    def write(self, b) -> int:
        write_all(self.fd, b)
        return len(memoryview(b))


def write_all(fd: int, data) -> None:
    """Every byte of data written to fd, or OSError: a short count is
    written on from where it stopped, a count of 0 is a full disk."""
    view = memoryview(data).cast("B")
    while view:
        n = os.write(fd, view[:1 << 24])
        if n <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        view = view[n:]


def _checked_file(fd: int, closefd: bool = True):
    """A binary file on fd, buffered, whose writes are all checked."""
    return io.BufferedWriter(_CheckedRaw(fd, closefd), buffer_size=1 << 20)


def _fill(f, data: Data) -> None:
    if callable(data):
        data(f)
    else:  # binary: a text-mode write of a big JSON costs several times more
        f.write(data.encode("utf-8"))


def _cannot_write(path: str, e: OSError) -> InputError:
    return InputError(path, f"cannot write: {e.strerror or e}", "nothing was written")


def write_atomic(path: str, data: Data) -> int | None:
    """Write data (a str, or a function writing into a binary file) to path
    by the rules in this module's docstring. Returns the bytes written to a
    regular file, None for a node written in place. The directory is
    opened once (open_parent) and everything after goes through that
    descriptor: nothing is looked up by path again after the checks."""
    dfd = open_parent(path)
    try:
        return _write_in(dfd, os.path.basename(os.path.abspath(path)), path, data)
    finally:
        os.close(dfd)


def _write_in(dfd: int, name: str, path: str, data: Data) -> int | None:
    try:
        st = os.lstat(name, dir_fd=dfd)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise InputError(path, f"cannot write: {e.strerror}") from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise InputError(path, "is a directory", "give a file name")
    if st is not None and stat.S_ISLNK(st.st_mode):
        _refuse_link_into_proc(path)
        _refuse_link_to_a_node(path)
    elif st is not None and not stat.S_ISREG(st.st_mode):
        _write_in_place(dfd, name, path, st, data)
        return None
    replaced = st if st is not None and stat.S_ISREG(st.st_mode) else None  # not a link's owner or mode
    mode = stat.S_IMODE(replaced.st_mode) if replaced else 0o666 & ~_umask()
    clean_stale_temps(dfd)
    # signals held from the temporary file's creation to the `try` that
    # removes it: a SIGTERM in between would leave it behind
    held = signal.pthread_sigmask(signal.SIG_BLOCK, (*TERMINATING, signal.SIGINT))
    try:
        fd, tmp = _make_temp(dfd)
    except OSError as e:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        raise InputError(path, f"cannot write: {e.strerror}", "check the directory's permissions") from None
    try:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        with _checked_file(fd) as f:
            _fill(f, data)
            f.flush()
            if replaced and not _keep_owner(f.fileno(), replaced):
                mode &= ~(stat.S_ISUID | stat.S_ISGID)
            os.fchmod(f.fileno(), mode)
            size = os.fstat(f.fileno()).st_size
        os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        return size
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dfd)
        if isinstance(e, OSError) and not isinstance(e, BrokenPipeError):
            raise _cannot_write(path, e) from None
        raise


# ---- the output's directory: opened a component at a time --------------------------

MAX_LINKS = 40  # the kernel's own limit on the links of one lookup


def _trusted_link(st: os.stat_result) -> bool:
    """A symbolic link ftflame follows on the way to an output: made by
    root or by the user running ftflame (a link another user made can point
    anywhere that user likes, and root would write there)."""
    return st.st_uid in (0, os.geteuid())


def open_parent(path: str) -> int:
    """A descriptor of the directory `path` goes into, found a component at
    a time with O_NOFOLLOW: a component that is a symbolic link is followed
    only when root or the user running ftflame owns it (_trusted_link),
    its target looked up by the same rule. The directory is then used
    through this descriptor only, so a component swapped for a link after
    the check changes nothing. `..` is taken lexically from the path given
    (as the shell's `cd` does), physically inside a link's target."""
    parent = os.path.dirname(os.path.abspath(path))
    # O_PATH: a directory is looked through, not read (a 0711 one too)
    flags = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC
    fd = os.open("/", flags)
    parts = [c for c in parent.split("/") if c not in ("", ".")]
    links = 0
    try:
        while parts:
            comp = parts.pop(0)
            try:
                nfd = os.open(comp, flags | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as e:
                st = _lstat_at(comp, fd)
                if e.errno not in (errno.ELOOP, errno.ENOTDIR) or st is None or not stat.S_ISLNK(st.st_mode):
                    where = "output directory does not exist" if e.errno == errno.ENOENT \
                        else f"cannot write: {e.strerror}"
                    raise InputError(path, where) from None
                if not _trusted_link(st):
                    raise InputError(path, f"its directory is reached through a symbolic link ({comp}) "
                                     f"owned by another user (uid {st.st_uid}): not followed",
                                     "give the directory's real path") from None
                links += 1
                if links > MAX_LINKS:
                    raise InputError(path, "cannot write: too many levels of symbolic links") from None
                target = os.readlink(comp, dir_fd=fd)
                if target.startswith("/"):
                    os.close(fd)
                    fd = os.open("/", flags)
                parts[:0] = [c for c in target.split("/") if c not in ("", ".")]
                continue
            os.close(fd)
            fd = nfd
    except BaseException:
        os.close(fd)
        raise
    return fd


def _lstat_at(name: str, dfd: int) -> os.stat_result | None:
    try:
        return os.lstat(name, dir_fd=dfd)
    except OSError:
        return None


# ---- temporary files: named by their writer, removed when it is gone ----------------

def _host() -> str:
    """This machine's name in a temporary file's name: a directory on NFS
    is shared with other machines, whose process numbers mean nothing here."""
    return "".join(c if c.isalnum() or c in "._" else "_" for c in os.uname().nodename)[:64] or "host"


def _make_temp(dfd: int) -> tuple:
    """(fd, name) of a new temporary file in dfd, named
    .ftflame-HOST-PID-RANDOM: which process writes it, on which machine.
    RANDOM from os.urandom, as secrets.token_hex makes it: not importing
    secrets (hmac, hashlib, random: ~3 ms of every command's start)."""
    for _ in range(100):
        name = f"{TEMP_PREFIX}{_host()}-{os.getpid()}-{os.urandom(4).hex()}"
        try:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                         0o600, dir_fd=dfd)
        except FileExistsError:
            continue
        return fd, name
    raise OSError(errno.EEXIST, "no free temporary file name")


def _writer_gone(name: str) -> bool:
    """Whether the temporary file `name` is one this machine's ftflame left
    behind when it was killed (SIGKILL, a power cut): its process is not
    running. A name of another machine, or not ftflame's, is never gone."""
    head, sep, rest = name.partition(TEMP_PREFIX)
    if head or not sep:
        return False
    host, _, tail = rest.rpartition("-")
    host, _, pid = host.rpartition("-")
    if host != _host() or not pid.isdigit() or not tail:
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # (EPERM: another user's process, alive)
        return False
    return False  # alive (or its number reused: left alone, to be safe)


def clean_stale_temps(dfd: int) -> None:
    """Remove the temporary files of ftflame writers that died in this
    directory (_writer_gone), owned by the user running ftflame: a SIGKILL
    cannot be caught, so its leftover goes at the next write here."""
    try:  # (dfd is an O_PATH descriptor: listed through a readable one)
        rfd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=dfd)
    except OSError:
        return  # (a directory we may write but not list: nothing cleaned)
    try:
        names = [n for n in os.listdir(rfd) if n.startswith(TEMP_PREFIX)]
    except OSError:
        return
    finally:
        os.close(rfd)
    for name in names:
        st = _lstat_at(name, dfd)
        if st is None or not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            continue
        if _writer_gone(name):
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=dfd)


def _keep_owner(fd: int, st: os.stat_result) -> bool:
    """The replacement owned as the file it replaces (root replacing a
    user's file would otherwise hand it to root); False when that cannot
    be done, and its set-id bits must go."""
    mine = os.fstat(fd)
    if (mine.st_uid, mine.st_gid) == (st.st_uid, st.st_gid):
        return True
    try:
        os.fchown(fd, st.st_uid, st.st_gid)
        return True
    except OSError:
        with contextlib.suppress(OSError):
            os.fchown(fd, -1, st.st_gid)  # the group at least, when we are in it
        return False


def _refuse_link_into_proc(path: str) -> None:
    """A link whose chain reaches a link in /proc (/dev/stdout ->
    /proc/self/fd/1) names an open file, not a place: replacing it breaks
    the system's link, and what the descriptor is cannot be told from
    here."""
    try:  # /proc/self is there only when procfs is mounted (not /proc's empty directory)
        proc = os.lstat("/proc/self").st_dev
    except OSError:
        return
    p = path
    for _ in range(40):  # the kernel's own limit on a chain
        try:
            st = os.lstat(p)
            if not stat.S_ISLNK(st.st_mode):
                return
            target = os.readlink(p)
        except OSError:
            return
        if st.st_dev == proc:
            raise InputError(path, f"is a symbolic link to an open file descriptor ({p} -> {target}): "
                             "not written through, not replaced",
                             "give '-' for stdout, or a file name")
        p = os.path.join(os.path.dirname(p), target)


def _refuse_link_to_a_node(path: str) -> None:
    try:
        target = os.stat(path)
    except OSError:
        return  # dangling or a loop: the link is replaced
    if not stat.S_ISREG(target.st_mode):
        raise InputError(path, "is a symbolic link to a device, FIFO, terminal or directory: "
                         "not followed, not replaced", "give the node itself, or '-' for stdout")


def _write_in_place(dfd: int, name: str, path: str, st: os.stat_result, data: Data) -> None:
    """A device, FIFO or terminal: opened as it is (never created, never
    truncated, never through a link), checked to be the node looked at."""
    flags = os.O_WRONLY | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC
    try:
        fd = _open_fifo(dfd, name, path, flags) if stat.S_ISFIFO(st.st_mode) \
            else os.open(name, flags, dir_fd=dfd)
    except OSError as e:
        raise InputError(path, f"cannot write: {e.strerror}",
                         "it is not a regular file: ftflame writes into devices, FIFOs "
                         "and terminals in place") from None
    try:
        if not _same_file(os.fstat(fd), st):
            raise InputError(path, "changed while being opened", "nothing was written")
        with _checked_file(fd, closefd=False) as f:  # (closed below)
            _fill(f, data)
    except OSError as e:
        if isinstance(e, BrokenPipeError):
            raise
        raise _cannot_write(path, e) from None
    finally:
        os.close(fd)


def _open_fifo(dfd: int, name: str, path: str, flags: int) -> int:
    """A FIFO's write end. Opening it waits for a reader: said on stderr
    first, or the command would hang without a word."""
    try:
        fd = os.open(name, flags | os.O_NONBLOCK, dir_fd=dfd)
    except OSError as e:
        if e.errno != errno.ENXIO:  # ENXIO: no reader yet
            raise
        say(f"{path}: a FIFO with no reader: waiting for one to open it "
            "(Ctrl-C to stop)")
        return os.open(name, flags, dir_fd=dfd)
    os.set_blocking(fd, True)
    return fd


# the standard streams (0, 1, 2) closed when ftflame started (`>&-`)
CLOSED_STREAMS: set = set()


def guard_standard_streams() -> None:
    """Each closed standard stream opened on /dev/null and noted in
    CLOSED_STREAMS: a file ftflame opens never takes number 1 or 2 (where
    a report or an error line would land in it), sys.stdout and friends
    are never None, and a report meant for a closed stdout is refused."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            CLOSED_STREAMS.add(fd)
            null = os.open(os.devnull, os.O_RDWR)  # the lowest free number: fd
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    for fd, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        if getattr(sys, name) is None:
            setattr(sys, name, open(fd, mode, closefd=False))


def _stdout_closed() -> InputError:
    return InputError("stdout", "is closed: nowhere to write the report",
                      "give -o FILE, or redirect stdout to a file")


def write_stdout(data: Data) -> None:
    """The report on stdout (a str, or a function writing into a binary file
    as the report is made: one too big to hold whole), as bytes (text mode
    costs 4x on big reports), every byte of it or an error: a failed or
    short write (a full disk) is bad output, not an ftflame bug, and not a
    success either."""
    if 1 in CLOSED_STREAMS:
        raise _stdout_closed()
    try:
        sys.stdout.flush()
        try:
            fd = sys.stdout.fileno()
        except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation: a test's capture
            fd = None
        if fd is None:
            if callable(data):
                data(_TextSink(sys.stdout))
            else:
                sys.stdout.write(data)
            sys.stdout.flush()
        elif callable(data):
            f = _checked_file(fd, closefd=False)
            data(f)
            f.flush()
        else:
            write_all(fd, data.encode("utf-8"))
    except BrokenPipeError:
        raise
    except OSError as e:
        raise InputError("stdout", f"cannot write: {e.strerror or e}",
                         "the report is incomplete; write it with -o FILE") from None


class _TextSink:
    """A binary file's write() onto a text stream without a descriptor (a
    test's capture)."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, b) -> None:
        self.stream.write(bytes(b).decode("utf-8", "surrogateescape"))


def say(text: str) -> None:
    """One line on stderr, "ftflame: " and text with every control
    character shown, not sent (names.printable: a path, a name or a value
    from a run folder can hold escape sequences). A stderr that cannot take
    it (full, closed) loses the line, never the exit code: the line is the
    explanation, the exit code the outcome."""
    try:
        sys.stderr.write(f"ftflame: {printable(text)}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


class Progress:
    """A progress bar on stderr, only when stderr is a terminal (never in CI
    logs or pipes). The total is estimated from the file size (events are
    about 11 bytes each in a zstd/zlib-compressed trace.dat, 40 otherwise),
    so the bar never claims 100% before the end and says "~"."""

    WIDTH = 24

    def __init__(self, label: str, enabled: bool, path: str = ""):
        self.label = printable(label)  # (a path: its control characters shown, not sent)
        self.enabled = enabled and sys.stderr.isatty()
        self.start = time.monotonic()
        self.shown = False
        self.estimate = _estimate_events(path) if (path and self.enabled) else 0

    def __call__(self, events: int) -> None:
        if not self.enabled:
            return
        dt = max(time.monotonic() - self.start, 1e-6)
        rate = f"{events / 1e6:.1f} M events ({events / dt / 1e6:.1f} M/s)"
        if self.estimate:
            frac = min(events / self.estimate, 0.99)
            fill = int(frac * self.WIDTH)
            bar = f"[{'#' * fill}{'.' * (self.WIDTH - fill)}] ~{frac * 100:3.0f}% "
        else:
            bar = ""
        sys.stderr.write(f"\r\033[K{self._fit(self.label, bar, rate)}")
        sys.stderr.flush()
        self.shown = True

    @staticmethod
    def _fit(label: str, bar: str, rate: str) -> str:
        """The line within the terminal's width (a longer one wraps, and
        each update then leaves a line behind): the label (a path) gives
        way first, cut at its start, then the bar."""
        room = shutil.get_terminal_size().columns - 1
        rest = f" {bar}{rate}"
        if len(label) + len(rest) > room:
            keep = room - len(rest)
            if keep < 16 and bar:
                rest, keep = f" {rate}", room - len(rate) - 1
            label = label if len(label) <= keep else "..." + label[len(label) - max(keep, 4) + 3:]
        return (label + rest)[:room]

    def stage(self, text: str) -> None:
        """A one-line note for a later stage (e.g. rendering), same rules."""
        if not self.enabled:
            return
        sys.stderr.write(f"\r\033[K{printable(text)[:shutil.get_terminal_size().columns - 1]}")
        sys.stderr.flush()
        self.shown = True

    def done(self) -> None:
        if self.shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
            self.shown = False


def _estimate_events(path: str) -> int:
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(64)
    except OSError:
        return 0
    compressed = b"zstd" in head or b"zlib" in head
    return size // (11 if compressed else 40)


def temporary_output(input_path: str, ext: str) -> str:
    """A file named after the input in a new temporary directory."""
    import tempfile  # here: its import (random) is in every command's start otherwise

    base = os.path.splitext(os.path.basename(os.path.normpath(input_path)))[0] or "report"
    return os.path.join(tempfile.mkdtemp(prefix="ftflame-"), f"{base}.{ext}")


def interactive() -> bool:
    """A person at a terminal, not CI or a pipe."""
    return sys.stdin.isatty() and sys.stderr.isatty() and not os.environ.get("CI")


def open_in_browser(path: str, quiet: bool = False) -> bool:
    """Open a written report in the user's browser, when interactive."""
    import webbrowser

    uri = "file://" + os.path.abspath(path)
    if not interactive():
        if not quiet:
            say(f"not opening {path}: not an interactive session")
        return False
    if not webbrowser.open(uri):
        say(f"no web browser found; open {uri} yourself")
        return False
    return True
