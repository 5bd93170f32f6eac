/* Operations and the slowest calls (ftflame/correct/operations.py): the operation
 * table, the kept slowest root calls, and one call's own tree drawn as a
 * flame chart (x = time inside the call, each call at its own start; y =
 * depth). Opened from a row here or a point of the latency plot. Every
 * figure is the JSON's; the page computes none. */
FT.calls = (function () {
  var O = FT.data.operations || [], L = FT.data.slowest || [], funcs = FT.data.funcs;
  var canvas = document.getElementById("call-canvas"), note = document.getElementById("call-note");
  var bySample = {}, cur = null, boxes = [], zoom = null;
  L.forEach(function (c, i) { bySample[c.sample] = i; });

  function opsTable() {
    var box = document.getElementById("ops-table");
    if (!O.length) { box.appendChild(FT.el("div", { class: "note" }, "No operations: the root calls reached no NFS procedure below them (a trace rooted at one procedure is one operation).")); return; }
    var t = FT.el("table", { class: "data", id: "ops" }), head = FT.el("tr");
    ["operation", "calls", "share", "p50", "p90", "p99", "max", "mean"].forEach(function (h, i) { head.appendChild(FT.el("th", i ? null : { class: "name" }, h)); });
    t.appendChild(FT.el("thead")).appendChild(head);
    var tb = t.appendChild(FT.el("tbody"));
    function fill() {
      FT.clear(tb);
      var c = FT.mode === "corr" && FT.calibrated;
      O.forEach(function (r) {
        var d = c ? r.dur_corr_ns : r.dur_ns, tr = FT.el("tr", { "data-operation": r.operation, title: "recognised by " + r.recognised_by });
        tr.appendChild(FT.el("td", { class: "name" }, r.root + ": " + r.operation));
        tr.appendChild(FT.el("td", null, FT.count(c ? r.calls - r.gap_calls : r.calls)));
        tr.appendChild(FT.el("td", null, FT.pct(100 * (c ? r.share_corr : r.share))));
        ["p50", "p90", "p99", "max", "mean"].forEach(function (k) {
          /* corrected: the 95% interval (JSON intervals.operations), with what it holds */
          var pm = c && r.dur_corr_pm_ns ? { title: FT.pm(r.dur_corr_pm_ns[k]) } : null;
          tr.appendChild(FT.el("td", pm, FT.us(d[k])));
        });
        tr.addEventListener("click", function () {
          var k = FT.data.samples.roots.indexOf(r.root + ": " + r.operation);
          if (k >= 0 && FT.latency) FT.latency.setRoot(k);
          if (FT.flame && FT.flame.setOp) FT.flame.setOp(r.operation);  /* no-op view for (no procedure) */
        });
        tb.appendChild(tr);
      });
    }
    fill();
    FT.onMode(fill);
    box.appendChild(t);
  }

  function slowTable() {
    var box = document.getElementById("slow-table");
    if (!L.length) return;
    var t = FT.el("table", { class: "data", id: "slowest" }), head = FT.el("tr");
    ["operation", "duration (raw)", "corrected", "start", "pid", "cpu"].forEach(function (h, i) { head.appendChild(FT.el("th", i ? null : { class: "name" }, h)); });
    t.appendChild(FT.el("thead")).appendChild(head);
    var tb = t.appendChild(FT.el("tbody")), rows = L.map(function (c, i) { return i; });
    rows.sort(function (a, b) { return L[b].dur - L[a].dur || a - b; });
    rows.forEach(function (i) {
      var c = L[i], tr = FT.el("tr", { "data-sample": c.sample });
      tr.appendChild(FT.el("td", { class: "name" }, c.root + (c.operation === null ? "" : ": " + c.operation) + (c.gap ? " (gap)" : "")));
      tr.appendChild(FT.el("td", null, FT.us(c.dur)));
      tr.appendChild(FT.el("td", null, FT.us(c.durc)));
      tr.appendChild(FT.el("td", null, (c.start_ns / 1e9).toFixed(6) + " s"));
      tr.appendChild(FT.el("td", null, c.pid));
      tr.appendChild(FT.el("td", null, c.cpu));
      tr.addEventListener("click", function () { open(c.sample); });
      tb.appendChild(tr);
    });
    box.appendChild(t);
  }

  function depths(T) {
    var d = new Array(T.parent.length), max = 0;
    for (var i = 0; i < d.length; i++) { d[i] = T.parent[i] < 0 ? 0 : d[T.parent[i]] + 1; if (d[i] > max) max = d[i]; }
    return { d: d, max: max };
  }

  function draw() {
    if (cur === null) return;
    var c = L[cur], T = c.tree, RH = 16;
    if (!T) {
      FT.fitCanvas(canvas, 20);
      note.textContent = c.kept_tree ? "This call's tree is not in this page (it carries the trees of the latency plot's highest points first, then more up to 1,500 drawn calls; their points are ringed): see slowest[] in the JSON report."
        : "This call's tree was too big to keep (more than 262,144 calls).";
      return;
    }
    var dd = depths(T), fit = FT.fitCanvas(canvas, Math.min(Math.max((dd.max + 1) * RH + 4, 60), 2000)), ctx = fit.ctx;
    /* zoomed on call `zoom` (a click on its box): its time across the
     * canvas, its callers above it as wide; a double-click goes back */
    var z = zoom !== null && zoom < T.func.length ? zoom : 0;
    var t0 = T.t[z], span = Math.max(T.incl[z], 1), w = fit.w;
    ctx.clearRect(0, 0, fit.w, fit.h);
    ctx.font = "11px system-ui, sans-serif";
    boxes = [];
    var drawn = 0;
    for (var i = 0; i < T.func.length; i++) {
      var x = Math.max((T.t[i] - t0) / span * w, 0), x1 = Math.min((T.t[i] + T.incl[i] - t0) / span * w, w);
      var bw = x1 - x, y = dd.d[i] * RH;
      if (bw < 0.3) continue;
      drawn++;
      var name = funcs[T.func[i]];
      ctx.fillStyle = FT.color(name, T.irq[i] ? "irq" : "task");
      ctx.fillRect(x, y, Math.max(bw - 0.5, 0.3), RH - 1);
      if (bw > 30) {
        ctx.fillStyle = "#1b1f24";
        ctx.save(); ctx.beginPath(); ctx.rect(x, y, bw, RH); ctx.clip();
        ctx.fillText(name, x + 3, y + 12); ctx.restore();
      }
      boxes.push([x, y, bw, i]);
    }
    note.textContent = c.root + (c.operation === null ? "" : ": " + c.operation) + ", " + FT.us(c.dur) + " \u00b5s raw, " + FT.us(c.durc) +
      " \u00b5s corrected, pid " + c.pid + ", cpu " + c.cpu + ", " + FT.count(T.calls) + " calls" +
      (T.calls > T.func.length ? " (" + FT.count(T.calls - T.func.length) + " under 0.4% of the call not drawn: their time is in their caller's box)" : "") +
      ". Each call at its own start time; hover for its figures; click a call to zoom on it" +
      (z ? " (zoomed on " + funcs[T.func[z]] + ": double-click for the whole call)" : "") +
      (drawn < T.func.length ? "; " + FT.count(T.func.length - drawn) + " too narrow to draw at this zoom" : "") + ".";
    canvas.setAttribute("data-zoom", z);
    canvas.setAttribute("data-drawn", drawn);
    canvas.setAttribute("data-sample", c.sample);
    document.querySelectorAll("#slowest tbody tr").forEach(function (tr) { tr.classList.toggle("sel", +tr.getAttribute("data-sample") === c.sample); });
    canvas.setAttribute("data-calls", T.func.length);
  }

  function open(sample) {
    if (!(sample in bySample)) return false;
    cur = bySample[sample];
    zoom = null;
    draw();
    /* the tree itself, its note and root on top, in view (not the section's
     * head, a table or two above it) */
    document.getElementById("call-tree").scrollIntoView({ block: "start" });
    return true;
  }

  canvas.addEventListener("mousemove", function (ev) {
    if (cur === null) return;
    var r = canvas.getBoundingClientRect(), px = ev.clientX - r.left, py = ev.clientY - r.top, T = L[cur].tree, hit = -1;
    for (var k = boxes.length - 1; k >= 0; k--) {
      var b = boxes[k];
      if (px >= b[0] && px <= b[0] + b[2] && py >= b[1] && py < b[1] + 16) { hit = b[3]; break; }
    }
    if (hit < 0) { FT.hideTip(); return; }
    FT.showTip(ev, function (t) {
      t.appendChild(FT.el("b", null, funcs[T.func[hit]]));
      var rows = [["inclusive (raw)", FT.time(T.incl[hit])], ["self (raw)", FT.time(T.excl[hit])],
                  ["inclusive (corrected)", FT.time(T.incl_corr ? T.incl_corr[hit] : null)], ["starts", FT.time(T.t[hit]) + " into the call"]];
      if (T.offcpu) rows.push(["off-CPU", FT.time(T.offcpu[hit])]);
      if (T.irq[hit]) rows.push(["", "interrupt context"]);
      if (T.args && T.args[hit]) rows.push(["arguments", T.args[hit].join(", ")]);
      if (T.ret && T.ret[hit] !== null) rows.push(["returned", T.ret[hit]]);
      t.appendChild(FT.tipTable(rows));
    });
  });
  canvas.addEventListener("mouseleave", FT.hideTip);
  canvas.addEventListener("click", function (ev) {
    if (cur === null) return;
    var r = canvas.getBoundingClientRect(), px = ev.clientX - r.left, py = ev.clientY - r.top;
    for (var k = boxes.length - 1; k >= 0; k--) {
      var b = boxes[k];
      if (px >= b[0] && px <= b[0] + b[2] && py >= b[1] && py < b[1] + 16) { zoom = b[3]; FT.hideTip(); draw(); return; }
    }
  });
  canvas.addEventListener("dblclick", function () { if (zoom !== null) { zoom = null; draw(); } });
  var rt = 0;
  window.addEventListener("resize", function () { clearTimeout(rt); rt = setTimeout(draw, 100); });

  opsTable();
  slowTable();
  if (!L.length) note.textContent = "No slowest calls kept (--slowest 0).";
  else note.textContent = "Click a row above, or a point of the latency plot, to draw that call's own tree.";
  return { open: open, current: function () { return cur === null ? null : L[cur].sample; } };
})();
