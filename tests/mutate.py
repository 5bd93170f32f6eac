"""make mutate: deliberate mistakes, made one at a time, and whether the test
suite catches each (issue 18: tests that bind).

Each mutation is (name, file, exact text, replacement, description). The
text must occur exactly once in the file. A mutation is applied in place, C
ones rebuilt with `make build`, the suite run (`pytest -x -q`, the files
that check figures first so a kill is found early), and the file restored
byte for byte, also on Ctrl-C or a crash (the original is kept in
build/mutate-backup/ until restored; a later run restores a leftover first).

    python tests/mutate.py                 # every mutation, the whole suite
    python tests/mutate.py --quick         # only the figure-checking test files (and the
                                           # HTML and browser ones for HTML/SVG mutations)
    python tests/mutate.py NAME...         # some mutations
    python tests/mutate.py --list

A killed mutation is one the suite fails on; a survivor is a mistake no test
catches. The report (also written to build/mutate-report.txt) gives the kill
rate and every survivor with its description."""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BACKUP = os.path.join(ROOT, "build", "mutate-backup")
REPORT = os.path.join(ROOT, "build", "mutate-report.txt")
PY = os.path.join(ROOT, ".venv", "bin", "python")

# run first: they check figures against independent references
FIRST = ["tests/test_binding.py", "tests/test_binding_flame.py", "tests/test_golden.py", "tests/test_jsonout.py",
         "tests/test_balance.py", "tests/test_corrections.py", "tests/test_anomalies.py",
         "tests/test_renderers.py", "tests/test_text.py", "tests/test_subbuf.py"]
# test_binding_html.py: the HTML's callers/callees and latency plot and the SVG's
# colours against the per-call reference; test_outputs_agree.py: every output's
# figures against the JSON's, with the real correction
HTML_FIRST = ["tests/test_binding_html.py", "tests/test_html.py", "tests/test_html_outputs.py",
              "tests/test_html_cli.py", "tests/test_outputs_agree.py"]


@dataclass(frozen=True)
class Mutation:
    name: str
    path: str
    find: str
    replace: str
    description: str


M = Mutation
MUTATIONS = [
    # ---- issue 18's table ---------------------------------------------------
    M("text-raw-p99", "report/text.py", "us(ft.incl_pct[i][2], 9, d[1])", "us(ft.incl_pct[i][1], 9, d[1])",
      "text report's raw p99 column prints p90"),
    M("html-func-p99", "report/html.py", '"p99": ft.incl_pct[:, 2].tolist(),',
      '"p99": ft.incl_pct[:, 1].tolist(),', "HTML function table p99 = p90"),
    M("flame-flags", "report/flametree.py", '("func", func), ("flags", flags),',
      '("func", func), ("flags", flags * 0),', "flame-graph frames lose their irq/partial flags (HTML, SVG)"),
    M("html-edges-excl", "ftflame/model/sandwich.py", 'incl = total(p.col("incl"))', 'incl = total(p.col("excl"))',
      "HTML callers/callees inclusive = exclusive"),
    M("html-latency-raw", "report/html.py",
      "durc = np.asarray(p.corrected_or_raw.sample_dur, dtype=np.float64)",
      'durc = np.asarray(p.scol("dur"), dtype=np.float64)', "HTML latency plot: corrected durations = raw"),
    M("text-self-avg", "report/text.py", "_mean_cell(self_corr, cc[r], d[2])",
      "_mean_cell(avg_corr, cc[r], d[2])",
      "text corrected tree: Self* prints Avg*"),
    M("balance-clamp-sign", "ftflame/correct/balance.py", "unacc = raw - (corr + o + i + f + w - cl)",
      "unacc = raw - (corr + o + i + f + w + cl)", "balance sheet: the clamp term's sign flipped"),
    M("json-exact-raw", "ftflame/correct/corrections.py",
      "    dur = (c.sample_dur if per_call is None else per_call)[ok]\n",
      '    dur = p.scol("dur")[ok].astype(np.float64)\n',
      "JSON exact corrected min/p50/p99/max of root calls taken from raw durations"),
    M("json-flags-irq", "report/common.py", '    if flags & NODE_IRQ:\n        out.append("irq")',
      '    if False:\n        out.append("irq")', 'JSON node flags lose "irq"'),
    M("c-irq-inherit", "parse/core/builder.c", "int in_irq = own_irq || parent_irq;", "int in_irq = own_irq;",
      "C: nested calls do not inherit irq context"),
    M("c-pct-off-by-one", "ftflame/native/percentiles.c", "if (run >= rank)", "if (run > rank)",
      "C histogram percentiles off by one"),
    # ---- the correction ----------------------------------------------------------
    M("subbuf-rate-kept", "ftflame/correct/subbuf.py",
      "    return np.where(desc > 0, cost * (moves - rate * desc), 0.0)",
      "    return np.where(desc > 0, 0.0 * moves, 0.0)",
      "correction: root calls keep the calibration's rate of sub-buffer moves, not their own count"),
    M("c-subbuf-root-exit", "parse/core/builder.c", "if (sb && t->n > 1)", "if (sb && t->n > 0)",
      "C: the root's own exit record counted among its sub-buffer moves"),
    M("corr-no-R", "ftflame/correct/corrections.py", "        R *= o_out\n",
      "        R *= 0.0\n", "correction: interrupts' O_out left in (R*O_out dropped)"),
    M("corr-D-o_in", "ftflame/correct/corrections.py", "        over += desc * o_sum\n        R =",
      "        over += desc * o_in\n        R =", "correction: descendants cost O_in only"),
    M("corr-irq-kept", "ftflame/correct/corrections.py", "    ci_formula -= irq_removed\n",
      "", "correction: interrupt subtrees not removed"),
    M("corr-off-kept", "ftflame/correct/corrections.py", "    ci_formula -= off\n",
      "", "correction: off-CPU time not removed"),
    M("corr-sample-R", "ftflame/correct/corrections.py",
      '        corr -= p.scol("irq_roots") * o_out\n', "",
      "root calls' correction: R*O_out dropped"),
    M("corr-sample-irq", "ftflame/correct/corrections.py",
      'corr[s_irq] = dur[s_irq] - s_off[s_irq] - o_in - p.scol("desc")[s_irq] * o_sum',
      'corr[s_irq] = dur[s_irq] - s_off[s_irq] - p.scol("desc")[s_irq] * o_sum',
      "root calls in irq context: O_in not removed"),
    M("corr-unreliable", "ftflame/correct/corrections.py", "unreliable = (over > UNRELIABLE_FRACTION * incl)",
      "unreliable = (over > incl)", "unreliable mark at 100% instead of 50% of the time"),
    M("corr-no-scale", "ftflame/correct/corrections.py", "ci[r_c] = want[r_c] * scale[parent[r_c]]",
      "ci[r_c] = want[r_c]", "clamp: children not scaled down to fit their parent"),
    M("corr-irq-counted", "ftflame/correct/corrections.py",
      'counted &= (p.col("flags") & NODE_IRQ_ROOT) == 0', 'counted &= (p.col("flags") & NODE_IRQ_ROOT) >= 0',
      "irq subtrees counted in their parent's corrected exclusive time"),
    # ---- balance sheet ------------------------------------------------------------
    M("balance-self-incl", "ftflame/correct/balance.py", "self_ns = excl_f[g] / n", "self_ns = corr_f[g] / n",
      "balance: root's self component = its inclusive time"),
    M("balance-accounted", "ftflame/correct/balance.py", 'ext["accounted_pct"] = round(100.0 * corr / m, 2)',
      'ext["accounted_pct"] = round(100.0 * m / corr, 2)', "balance: accounted % inverted"),
    M("balance-irq-over", "ftflame/correct/balance.py", "i = irq_f[g] / n", "i = irq_f[g] / n * 0",
      "balance: interrupt subtrees term 0 (lands in unaccounted)"),
    # ---- renderers ------------------------------------------------------------------
    M("text-total-raw", "report/text.py", "{us(ft.incl_corr[i], 10, d[2])}", "{us(ft.incl[i], 10, d[2])}",
      "text corrected function table: Total* prints the raw total"),
    M("text-avgc-raw", "report/text.py", "_mean_cell(avg_corr, cc[r], d[1])",
      "_mean_cell(avg, cc[r], d[1])",
      "text corrected tree: Avg* prints Avg"),
    M("text-self-incl", "report/text.py", "{us(excl[r], 9, d[1])}", "{us(incl[r], 9, d[1])}",
      "text raw tree: Self prints Total"),
    M("json-no-exact", "ftflame/correct/corrections.py", '    exact = by_node if kind == "incl" else {}\n',
      "    exact = {}\n",
      "tree (JSON and every output): root paths' corrected statistics scaled instead of exact"),
    M("json-func-no-exact", "ftflame/correct/corrections.py", 'by_func if kind == "incl" else {}, rounded_mean=True)',
      "{}, rounded_mean=True)",
      "functions (JSON and every output): root functions' corrected statistics scaled instead of exact"),
    M("exact-rank", "ftflame/correct/corrections.py",
      "v[start + np.maximum(np.ceil(lens * q / 100.0).astype(np.int64) - 1, 0)]",
      "v[start + np.minimum(np.ceil(lens * q / 100.0).astype(np.int64), lens - 1)]",
      "exact corrected percentiles one rank high"),
    M("folded-corr-raw", "report/folded.py",
      'weight = (p.corrected_or_raw.excl if corrected else p.col("excl")).tolist()',
      'weight = p.col("excl").tolist()', "folded --folded-weights corrected: the weights are raw"),
    M("speedscope-corr-raw", "report/speedscope.py",
      'variants.append(("corrected", np.asarray(p.corrected_or_raw.incl, dtype=np.float64),',
      'variants.append(("corrected", p.col("incl").astype(np.float64),',
      "speedscope corrected profile shows raw times"),
    M("svg-irq-colour", "report/svg.py", "elif tree.flags[i] & NODE_IRQ:", "elif False:",
      "SVG: irq frames drawn as task frames"),
    M("mids-lower", "ftflame/model/profile.py",
      "mids = np.where(b < HIST_SUB, lower, (lower + hist_upper(b) - 1) // 2)", "mids = lower",
      "percentiles printed as bucket lower bounds instead of midpoints"),
    # ---- C builder: flags and percentiles -----------------------------------------
    M("c-partial-inherit", "parse/core/builder.c",
      "if (parent != FTF_NONE && (b->nodes[parent].flags & FTF_NODE_PARTIAL))\n\t\tn->flags |= FTF_NODE_PARTIAL;",
      "", "C: children of partial paths lose the partial flag"),
    M("c-irq-root", "parse/core/builder.c", "irq_root = in_irq && !parent_irq;", "irq_root = in_irq;",
      "C: every irq-context call is an irq root"),
    M("c-pct-no-clamp", "ftflame/native/percentiles.c", "if (val > hi[i])\n\t\t\t\t\tval = hi[i];", "",
      "C percentiles not clamped to the row's max"),
    # ---- the HTML page's own script -------------------------------------------------
    M("html-slowest-fastest-first", "templates/calls.js", "rows.sort(function (a, b) { return L[b].dur - L[a].dur || a - b; });",
      "rows.sort(function (a, b) { return L[a].dur - L[b].dur || a - b; });",
      "HTML slowest-calls table sorted fastest first"),
    M("c-pct-rank-floor", "ftflame/native/percentiles.c", "int64_t rank = (int64_t)ceil((double)total * frac[j]);",
      "int64_t rank = (int64_t)((double)total * frac[j]);", "C percentile rank floored instead of ceiled"),
    # ---- ftflame diff's verdicts ------------------------------------------------
    M("diff-drift-one-side", "ftflame/diff/model.py",
      "ok &= (np.minimum(fb.neff, fa.neff) >= stats.DRIFT_MIN_CALLS)",
      "ok &= (np.maximum(fb.neff, fa.neff) >= stats.DRIFT_MIN_CALLS)",
      "diff: the drift measured over functions with enough calls on one side only"),
    M("diff-calls-as-runs", "ftflame/diff/stats.py", "runs = both & (not runs_identical) & ((k_b >= 2) | (k_a >= 2))",
      "runs = both & False", "diff: calls taken as independent however many runs (the runs not the replicates)"),
    M("diff-p-rounded", "report/diff_json.py", '"p": _ptext(t.p_text[i]), "p_adjusted": _ptext(t.q_text[i]),',
      '"p": _num(t.p[i], 6), "p_adjusted": _num(t.q[i], 6),', "diff JSON: p-values rounded apart from the text's"),
    M("diff-neff-all-roots", "ftflame/diff/model.py", "    neff = np.minimum(n, indep)\n",
      "    neff = np.minimum(n, root_calls)\n",
      "diff: independent calls = all root calls of the side, not the ones that called the item"),
    M("diff-run-presence", "ftflame/diff/model.py",
      "seen = (fb.runs_present >= need_b) & (fa.runs_present >= need_a)", "seen = fb.runs_present >= 0",
      "diff: an item called in one run of several judged as the side's"),
    M("diff-no-drift", "ftflame/diff/model.py", "    if abs(mid) < stats.DRIFT_MIN:\n        return None",
      "    if True:\n        return None",
      "diff: a global drift never detected (every function judged against 0)"),
    M("c-func-roots-per-path", "parse/core/builder.c", "if (stamp && *stamp != serial) {", "if (stamp) {",
      "C: a function's root calls counted once per path, not once per root call"),
    M("c-text-ms-as-us", "parse/core/reader_text.c",
      "else if (ul == 2 && q[0] == 'm' && q[1] == 's')\n\t\tunit = 1000000;",
      "else if (ul == 2 && q[0] == 'm' && q[1] == 's')\n\t\tunit = 1000;",
      "C text reader: durations printed in ms read as us"),
    M("c-text-s-as-ms", "parse/core/reader_text.c", "unit = 1000000000ULL;", "unit = 1000000;",
      "C text reader: durations printed in s read as ms"),
]


def restore_leftovers() -> None:
    """A previous run that died mid-mutation left its originals here."""
    if not os.path.isdir(BACKUP):
        return
    for dirpath, _, files in os.walk(BACKUP):
        for f in files:
            src = os.path.join(dirpath, f)
            dst = os.path.join(ROOT, os.path.relpath(src, BACKUP))
            shutil.copyfile(src, dst)
            print(f"mutate: restored {os.path.relpath(dst, ROOT)} from an interrupted run")
    shutil.rmtree(BACKUP)


def is_c(m: Mutation) -> bool:
    return m.path.endswith((".c", ".h"))


def build() -> None:
    subprocess.run(["make", "-s", "build"], cwd=ROOT, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def pytest_args(m: Mutation, quick: bool) -> list:
    """Figure-checking files first (HTML ones first for HTML mutations), then
    the rest of the suite unless quick (pytest collects each file once)."""
    html = m.path in ("report/html.py", "report/flametree.py", "report/svg.py") or m.path.startswith("templates/")
    first = HTML_FIRST + ["tests/browser"] + FIRST if html else FIRST + HTML_FIRST
    if m.path.startswith(("ftflame/diff/", "report/diff_")):
        first = ["tests/test_diff.py", "tests/test_diff_props.py"] + first
    return first if quick else first + ["tests"]


def run_one(m: Mutation, quick: bool) -> tuple:
    path = os.path.join(ROOT, m.path)
    with open(path, "rb") as f:
        original = f.read()
    text = original.decode("utf-8")
    if text.count(m.find) != 1:
        return "not applied", f"text found {text.count(m.find)} times in {m.path}", 0.0
    backup = os.path.join(BACKUP, m.path)
    os.makedirs(os.path.dirname(backup), exist_ok=True)
    shutil.copyfile(path, backup)
    t0 = time.time()
    try:
        with open(path, "w") as f:
            f.write(text.replace(m.find, m.replace, 1))
        if is_c(m):
            build()
        env = dict(os.environ)
        env.setdefault("FTFLAME_INFERNO_ROOT", os.path.expanduser("~/.cache/ftflame/inferno-0.12.8"))
        env.setdefault("FTFLAME_SPEEDSCOPE_SCHEMA", os.path.join(
            ROOT, ".cache/npm/node_modules/speedscope/dist/release/file-format-schema.json"))
        proc = subprocess.run([PY, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
                               *pytest_args(m, quick)], cwd=ROOT, capture_output=True, text=True,
                              env=env)
        failed = [line.split(" ")[1] for line in proc.stdout.splitlines()
                  if line.startswith(("FAILED ", "ERROR "))]
        if proc.returncode == 0:
            return "survived", "", time.time() - t0
        return "killed", failed[0] if failed else f"pytest exit {proc.returncode}", time.time() - t0
    finally:
        with open(path, "wb") as f:
            f.write(original)
        os.remove(backup)
        if is_c(m):
            build()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*", help="mutations to run (default: all)")
    ap.add_argument("--quick", action="store_true", help="only the figure-checking test files")
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args(argv)
    if args.list:
        bad = 0
        for m in MUTATIONS:
            with open(os.path.join(ROOT, m.path)) as f:
                n = f.read().count(m.find)
            bad += n != 1
            print(f"{m.name:22} {m.path:24} {m.description}" + ("" if n == 1 else f"  [text found {n} times]"))
        return 1 if bad else 0
    chosen = [m for m in MUTATIONS if not args.names or m.name in args.names]
    unknown = set(args.names) - {m.name for m in MUTATIONS}
    if unknown:
        print(f"mutate: unknown mutations: {', '.join(sorted(unknown))} (--list)", file=sys.stderr)
        return 2
    restore_leftovers()
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    results = []
    for m in chosen:
        verdict, detail, secs = run_one(m, args.quick)
        results.append((m, verdict, detail, secs))
        print(f"{verdict:11} {m.name:22} {secs:6.1f}s  {m.description}" + (f"  [{detail}]" if detail else ""),
              flush=True)
    applied = [r for r in results if r[1] != "not applied"]
    killed = [r for r in applied if r[1] == "killed"]
    lines = [f"mutate: {len(killed)} of {len(applied)} mutations killed "
             f"({100.0 * len(killed) / max(len(applied), 1):.0f}%)"
             + (" (--quick: figure-checking files only)" if args.quick else "")]
    for m, verdict, detail, _ in results:
        if verdict != "killed":
            lines.append(f"  {verdict}: {m.name} ({m.path}): {m.description}" + (f" [{detail}]" if detail else ""))
    shutil.rmtree(BACKUP, ignore_errors=True)  # every original is back
    os.makedirs(os.path.dirname(REPORT), exist_ok=True)
    with open(REPORT, "w") as f:
        f.write("\n".join(f"{v:11} {m.name:22} {s:6.1f}s  {m.description}  [{d}]"
                          for m, v, d, s in results) + "\n\n" + "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 1 if any(v == "not applied" for _, v, _, _ in results) else 0


if __name__ == "__main__":
    sys.exit(main())
