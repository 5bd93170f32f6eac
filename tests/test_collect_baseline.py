"""collect.sh --baseline records the graph functions hooked alone and, beside
them, the interrupt entry functions this kernel has (issue 17,
docs/overhead.md "Accuracy, call by call"): an interrupt or softirq inside a
root call then shows as an interrupt subtree in baseline.dat, which the
report takes out as it does in trace.dat, so that the accounted % compares
like with like.

The collector runs on the fakes of tests/helpers/collectfake.py; the fake
trace-cmd logs each record command's words (FAKE_TC_LOG)."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from helpers.collectfake import COLLECT, NFSD_FUNCS, fake_tracefs, script_env

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="collect.sh refuses to run but as root")

# Lines of a 6.12 kernel's available_filter_functions (tests/vm/fixtures/
# k6.12/s19-icount-irq/irq-hooks.txt lists what that kernel has); some
# twice, as static functions of the same name are; rcu_core (no _si) and
# sysvec_ without the underscores are not entry functions to hook.
KERNEL_IRQ_FUNCS = ("irq_enter_rcu", "irq_exit_rcu", "__common_interrupt", "__sysvec_apic_timer_interrupt",
                    "__sysvec_irq_work", "__sysvec_irq_work", "__sysvec_call_function_single",
                    "rcu_core_si", "run_timer_softirq", "net_rx_action", "tasklet_action",
                    "sched_balance_softirq", "rcu_core", "sysvec_apic_timer_interrupt")
HOOKED = ["__common_interrupt", "__sysvec_apic_timer_interrupt", "__sysvec_call_function_single",
          "__sysvec_irq_work", "irq_enter_rcu", "irq_exit_rcu", "net_rx_action", "rcu_core_si",
          "run_timer_softirq", "sched_balance_softirq", "tasklet_action"]


def record_commands(work, *opts):
    """(each trace-cmd record's argv, meta.json) of a collect.sh run."""
    t = fake_tracefs(work, functions=NFSD_FUNCS + KERNEL_IRQ_FUNCS)
    log = work / "tc.log"
    env = script_env(work, tracefs=t, extra={"FAKE_TC_LOG": str(log)})
    r = subprocess.run(["bash", str(COLLECT), "-g", "nfsd3_proc_write", "--no-calibrate", *opts,
                        "-o", str(work / "run"), "--", "true"],
                       cwd=work, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    argvs = [json.loads(line)["argv"] for line in log.read_text().splitlines()]
    return argvs, json.loads((work / "run" / "meta.json").read_text())


def hooked(argv) -> list:
    """The functions a record command hooks (-l), in order."""
    return [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "-l"]


def test_baseline_hooks_the_interrupt_entries_this_kernel_has(work):
    (main, base), meta = record_commands(work, "--baseline")
    assert hooked(base)[0] == "nfsd3_proc_write" and "-g" in base
    assert sorted(hooked(base)[1:]) == HOOKED  # each once, only those present
    assert meta["baseline"]["irq_entry_functions"] == hooked(base)[1:]
    # the main recording hooks its whole graph, as before: no -l at all
    assert hooked(main) == [] and main[main.index("-g") + 1] == "nfsd3_proc_write"


def test_without_baseline_nothing_changes(work):
    (main,), meta = record_commands(work)
    assert hooked(main) == [] and meta["baseline"] is None
