"""The balance sheet's CPU accounting in the text report: the figures of
ftflame/correct/cpu.py (the report's `cpu` object), printed only."""
from __future__ import annotations

from ftflame.model.profile import Profile

from .common import us, wrap


def _ms(ns: float) -> str:
    return f"{ns / 1e6:,.3f} ms"


def _pct(v) -> str:
    return "-" if v is None else f"{v:.1f}%"


def cpu_lines(p: Profile) -> list:
    c = p.cpu
    if not c:
        return []
    rpc = c["server_rpc_calls"]
    out = ["CPU time of the nfsd threads, measured outside the tracer", ""]
    out += wrap(f"  {c['file']}: {c['source']}, {c['threads']} nfsd threads; on-CPU during the workload "
                f"{_ms(c['nfsd_on_cpu_ns'])}" + (f", {rpc:,} server RPCs" if rpc is not None else "")
                + f", {c['root_calls']:,} root calls in the trace", "    ")
    for part in c["parts"]:
        out.append(f"    {_pct(part['pct']):>7}  {_ms(part['ns']):>14}  {part['label']}")
    if c["machine"]:
        out += wrap(f"  the machine ({c['machine_cpus']} CPUs, /proc/stat): " + ", ".join(
            f"{m['kind']} {_pct(m['pct'])}" for m in c["machine"]), "    ")
    r = c["per_rpc"]
    if r:
        out += wrap(f"  baseline ({r['file']}, only the roots hooked): {_ms(r['baseline_on_cpu_ns'])} on-CPU, "
                    f"{r['baseline_rpc_calls']:,} server RPCs", "    ")
        if r["baseline_on_cpu_per_rpc_ns"] is not None:
            out.append(f"    on-CPU per RPC (baseline):      {us(r['baseline_on_cpu_per_rpc_ns'])} us")
        if r["corrected_per_root_call_ns"] is not None:
            out.append(f"    corrected on-CPU per root call: {us(r['corrected_per_root_call_ns'])} us"
                       + (f" ({r['root_calls_per_rpc']:.3f} root calls per RPC)"
                          if r["root_calls_per_rpc"] is not None else ""))
        if r["unexplained_ns"] is not None:
            out.append(f"    not explained by the correction: {us(r['unexplained_ns'])} us per RPC "
                       f"({_pct(r['unexplained_pct'])} of it)")
        if r["main_on_cpu_per_rpc_ns"] is not None:
            out.append(f"    on-CPU per RPC while traced:    {us(r['main_on_cpu_per_rpc_ns'])} us")
    for w in c["warnings"]:
        out += wrap("  WARNING: " + w, "    ")
    out.append("")
    return out
