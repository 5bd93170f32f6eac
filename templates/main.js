/* Balance sheet (ftflame/correct/balance.py), the raw/corrected switch, start-up.
 * One readable table per root function: where its measured mean went, then
 * the check against an independent total when one was given. Every figure
 * is the JSON's; the page computes none. */
FT.balance = (function () {
  var B = FT.data.balance, body = document.getElementById("balance-body");
  function row(t, label, v, note, cls) {
    var tr = FT.el("tr", cls ? { class: cls } : null);
    tr.appendChild(FT.el("th", null, label));
    tr.appendChild(FT.el("td", { class: "n" }, v === null || v === undefined ? "\u2013" : typeof v === "string" ? v : FT.us(v)));
    tr.appendChild(FT.el("td", { class: "note" }, note || ""));
    t.appendChild(tr);
  }
  function sheet(b) {
    var box = FT.el("div", { class: "balance-root", "data-function": b.function });
    box.appendChild(FT.el("h3", null, b.function));
    box.appendChild(FT.el("div", { class: "note" }, FT.count(b.calls) + " clean call" + (b.calls === 1 ? "" : "s") +
      (b.gap_calls ? ", " + FT.count(b.gap_calls) + " gap call" + (b.gap_calls === 1 ? "" : "s") + " left out" : "") +
      "; means per call, \u00b5s"));
    var t = FT.el("table", { class: "plain balance" });
    row(t, "measured (raw mean)", b.measured_raw_mean_ns, "from this trace", "total");
    row(t, "= corrected components", b.corrected_mean_ns, "the synthetic total" +
      (b.corrected_mean_pm_ns !== null && b.corrected_mean_pm_ns !== undefined ?
        ", \u00b1 " + FT.us(b.corrected_mean_pm_ns) + " (" + FT.PM_NOTE + ")" : ""), "sub");
    b.components.forEach(function (c) { row(t, "\u2003" + c.name, c.mean_ns, "", "comp"); });
    if (b.children_scaled_mean_ns) row(t, "\u2003(children scaled down by)", b.children_scaled_mean_ns,
      "to fit inside the root: already out of the components, not a term", "comp");
    row(t, "+ tracer hook cost removed", b.overhead_mean_ns, "");
    row(t, "+ interrupt subtrees", b.irq_mean_ns, b.irq_per_call.toFixed(2) + "/call" +
      (b.irq_corrected_mean_ns !== null && b.irq_mean_ns ? ", own work " + FT.us(b.irq_corrected_mean_ns) : ""));
    row(t, "+ off-CPU (sched_switch)", b.offcpu_mean_ns, b.offcpu_mean_ns === null ? "unknown: no sched_switch events" : "");
    if (b.switch_work_mean_ns !== undefined) row(t, "+ scheduler\u2019s work around switches", b.switch_work_mean_ns,
      "around " + FT.count(b.switches) + (b.switches === 1 ? " switch" : " switches") + ", taken out with the off-CPU time");
    if (b.clamped_mean_ns) row(t, "\u2212 clamped", b.clamped_mean_ns, "the root\u2019s corrected time was below 0: set to 0");
    row(t, "+ unaccounted", b.unaccounted_mean_ns, "");
    var e = b.external;
    if (e) {
      row(t, "measured independently", e.mean_ns, e.source + (e.calls ? ", " + FT.count(e.calls) + " calls" : ""), "ext");
      row(t, "difference (corrected \u2212 measured)", (e.difference_ns >= 0 ? "+" : "\u2212") + FT.us(Math.abs(e.difference_ns)), "");
      row(t, "accounted %", e.accounted_pct === null ? null : FT.pct(e.accounted_pct), b.accounted_note, "acc");
    } else {
      row(t, "accounted %", null, b.accounted_note, "acc");
    }
    (b.independent || []).forEach(function (x) {
      if (e && x.source === e.source) return;  /* shown above */
      row(t, "measured independently", x.mean_ns, x.source, "ext");
      row(t, "difference (corrected \u2212 it)", (x.difference_ns >= 0 ? "+" : "\u2212") + FT.us(Math.abs(x.difference_ns)),
        x.difference_pct === null ? "" : (x.difference_pct >= 0 ? "+" : "\u2212") + Math.abs(x.difference_pct).toFixed(1) + "%");
    });
    box.appendChild(t);
    return box;
  }
  function render() {
    FT.clear(body);
    if (!B || !B.length) {
      body.appendChild(FT.el("p", { class: "note", id: "balance-none" },
        "No balance sheet in this report: it is made per root function when corrections are applied (a calibration). " +
        "Each sheet shows measured = corrected components + removed hook cost + irq + off-CPU + unaccounted; " +
        "an accounted % needs an independent total: a root-only baseline recording (collect.sh --baseline, then --baseline) or --measured FUNC=TIME."));
      return;
    }
    var wrap = FT.el("div", { id: "balance-table" });
    B.forEach(function (b) { wrap.appendChild(sheet(b)); });
    body.appendChild(wrap);
    body.appendChild(FT.el("p", { class: "note" }, "measured raw mean = corrected components + tracer hook cost removed + interrupt subtrees + off-CPU (+ the scheduler\u2019s work around switches, where the calls hold any) \u2212 clamped + unaccounted. " +
      "Against the trace itself this holds by construction; the accounted % compares the corrected mean with a total measured some other way."));
  }
  /* the nfsd threads' CPU time measured outside the tracer (ftflame/correct/cpu.py) */
  function cpuBox(C) {
    var box = FT.el("div", { id: "balance-cpu" }), ms = function (ns) { return (ns / 1e6).toFixed(3) + " ms"; };
    box.appendChild(FT.el("h3", null, "CPU time of the nfsd threads, measured outside the tracer"));
    box.appendChild(FT.el("div", { class: "note" }, C.file + ": " + C.source + ", " + C.threads + " nfsd threads" +
      (C.server_rpc_calls === null ? "" : ", " + FT.count(C.server_rpc_calls) + " server RPCs") + ", " + FT.count(C.root_calls) + " root calls in the trace"));
    var t = FT.el("table", { class: "plain balance" });
    row(t, "on-CPU during the workload", ms(C.nfsd_on_cpu_ns), "100%", "total");
    C.parts.forEach(function (x) { row(t, "\u2003" + x.label, ms(x.ns), x.pct === null ? "" : FT.pct(x.pct), "comp"); });
    C.machine.forEach(function (m) { row(t, "machine: " + m.kind, ms(m.ns), (m.pct === null ? "" : FT.pct(m.pct)) + " of " + C.machine_cpus + " CPUs (/proc/stat)", "ext"); });
    var r = C.per_rpc;
    if (r) {
      row(t, "on-CPU per RPC (baseline), \u00b5s", r.baseline_on_cpu_per_rpc_ns, r.file + ", " + FT.count(r.baseline_rpc_calls) + " server RPCs", "ext");
      row(t, "corrected on-CPU per root call, \u00b5s", r.corrected_per_root_call_ns, r.root_calls_per_rpc === null ? "" : r.root_calls_per_rpc.toFixed(3) + " root calls per RPC");
      row(t, "not explained by the correction, \u00b5s", r.unexplained_ns, r.unexplained_pct === null ? "" : FT.pct(r.unexplained_pct) + " of the on-CPU time per RPC", "acc");
      row(t, "on-CPU per RPC while traced, \u00b5s", r.main_on_cpu_per_rpc_ns, "");
    }
    box.appendChild(t);
    C.warnings.forEach(function (w) { box.appendChild(FT.el("p", { class: "note warn" }, "WARNING: " + w)); });
    return box;
  }
  function renderAll() {
    render();
    if (FT.data.cpu) body.appendChild(cpuBox(FT.data.cpu));
  }
  return { render: renderAll, init: renderAll };
})();

(function () {
  document.getElementById("mode-raw").addEventListener("click", function () { FT.setMode("raw"); });
  document.getElementById("mode-corr").addEventListener("click", function () { FT.setMode("corr"); });
  document.getElementById("mode-raw").classList.toggle("on", FT.mode === "raw");
  document.getElementById("mode-corr").classList.toggle("on", FT.mode === "corr");
  [FT.flame, FT.functions, FT.latency, FT.balance].forEach(function (part) { part.init(); });
  FT.readyMs = performance.now(); /* bench/html_load.py reads it */
  document.documentElement.setAttribute("data-ready", "1");
})();
