/* Latency over time: each root call's duration against its start time, per
 * root function, on a canvas; drag a box to zoom, double-click to reset. */
FT.latency = (function () {
  var S = FT.data.samples, GAP = FT.data.sample_flags.gap;
  var canvas = document.getElementById("lat-canvas"), sel = document.getElementById("lat-root");
  var root = -1, logY = true, view = null, drag = null, pts = [], M = { l: 64, r: 14, t: 10, b: 34 }, fit = null;
  /* the points whose call's tree the page carries (chosen beside the Profile,
   * the highest of every view first): only these are clickable */
  var tree = {};
  (S.trees || []).forEach(function (e) { tree[e[0]] = e[1]; });
  var order = S.roots.map(function (_, k) { return k; }).sort(function (a, b) { return S.root_calls[b] - S.root_calls[a] || a - b; });
  if (S.roots.length > 1) sel.appendChild(FT.el("option", { value: -1 }, "all root functions (" + FT.count(S.total) + " calls)"));
  order.forEach(function (k) { sel.appendChild(FT.el("option", { value: k }, S.roots[k] + " (" + FT.count(S.root_calls[k]) + " calls)")); });
  if (order.length) root = S.roots.length > 1 ? order[0] : 0;
  sel.value = root;

  function durs() { return FT.mode === "corr" && S.durc ? S.durc : S.dur; }
  function selected() {
    var out = [];
    for (var k = 0; k < S.t.length; k++) if (root < 0 || S.root[k] === root) out.push(k);
    return out;
  }
  function fullView(idx) {
    var d = durs(), x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
    idx.forEach(function (k) {
      if (d[k] === null) return;  /* a gap call: no corrected duration */
      if (S.t[k] < x0) x0 = S.t[k];
      if (S.t[k] > x1) x1 = S.t[k];
      var v = logY ? Math.max(d[k], 1) : d[k];
      if (v < y0) y0 = v;
      if (v > y1) y1 = v;
    });
    if (!idx.length) return { x0: 0, x1: 1, y0: 1, y1: 10 };
    if (x1 <= x0) { x0 -= 1e6; x1 += 1e6; }
    var px = (x1 - x0) * 0.02;
    if (logY) { y0 = y0 / 1.3; y1 = y1 * 1.3; if (y1 <= y0 * 1.01) y1 = y0 * 10; }
    else { y0 = 0; y1 = y1 * 1.05 || 1; }
    return { x0: x0 - px, x1: x1 + px, y0: y0, y1: y1 };
  }
  function sx(t) { return M.l + (t - view.x0) / (view.x1 - view.x0) * (fit.w - M.l - M.r); }
  function sy(v) {
    var h = fit.h - M.t - M.b;
    if (logY) return M.t + h - (Math.log(Math.max(v, 1e-9)) - Math.log(view.y0)) / (Math.log(view.y1) - Math.log(view.y0)) * h;
    return M.t + h - (v - view.y0) / (view.y1 - view.y0) * h;
  }
  function ix(px) { return view.x0 + (px - M.l) / (fit.w - M.l - M.r) * (view.x1 - view.x0); }
  function iy(py) {
    var h = fit.h - M.t - M.b, f = (M.t + h - py) / h;
    return logY ? Math.exp(Math.log(view.y0) + f * (Math.log(view.y1) - Math.log(view.y0))) : view.y0 + f * (view.y1 - view.y0);
  }
  function niceStep(span, n) {
    var raw = span / n, p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
  }

  function draw() {
    fit = FT.fitCanvas(canvas, 340);
    var ctx = fit.ctx, idx = selected(), d = durs();
    if (!view) view = fullView(idx);
    ctx.clearRect(0, 0, fit.w, fit.h);
    ctx.font = "11px system-ui, sans-serif";
    var pw = fit.w - M.l - M.r, ph = fit.h - M.t - M.b;
    /* grid and axes */
    ctx.strokeStyle = "#eceff2"; ctx.fillStyle = "#5b6573"; ctx.textAlign = "center";
    var st = niceStep(view.x1 - view.x0, 8), t;
    for (t = Math.ceil(view.x0 / st) * st; t <= view.x1; t += st) {
      var x = sx(t);
      ctx.beginPath(); ctx.moveTo(x, M.t); ctx.lineTo(x, M.t + ph); ctx.stroke();
      ctx.fillText((t / 1e9).toFixed(Math.max(0, -Math.floor(Math.log10(st / 1e9)))) + " s", x, M.t + ph + 14);
    }
    ctx.fillText("start time since the trace began", M.l + pw / 2, M.t + ph + 28);
    ctx.textAlign = "right";
    var ticks = [];
    if (logY) ticks = FT.logTicks(view.y0, view.y1);
    else { var sy0 = niceStep(view.y1 - view.y0, 6); for (t = Math.ceil(view.y0 / sy0) * sy0; t <= view.y1; t += sy0) ticks.push(t); }
    ticks.forEach(function (v) {
      var y = sy(v);
      ctx.beginPath(); ctx.moveTo(M.l, y); ctx.lineTo(M.l + pw, y); ctx.stroke();
      ctx.fillText(FT.short(v), M.l - 4, y + 4);
    });
    ctx.strokeStyle = "#9aa3ad";
    ctx.strokeRect(M.l, M.t, pw, ph);
    /* points */
    ctx.save();
    ctx.beginPath(); ctx.rect(M.l, M.t, pw, ph); ctx.clip();
    pts = [];
    var colors = {}, vals = [];
    idx.forEach(function (k) {
      var v = d[k];
      if (v === null || S.t[k] < view.x0 || S.t[k] > view.x1) return;  /* null: a gap call, corrected view */
      vals.push(v);
      if (v < view.y0 || v > view.y1) return;
      var x = sx(S.t[k]), y = sy(v), c = colors[S.root[k]] || (colors[S.root[k]] = root < 0 ? FT.color(S.roots[S.root[k]], "irq") : "#2f5d8a");
      ctx.fillStyle = c;
      ctx.fillRect(x - 1.5, y - 1.5, 3, 3);
      if (S.flags[k] & GAP) { ctx.strokeStyle = "#d62828"; ctx.beginPath(); ctx.arc(x, y, 4, 0, 6.3); ctx.stroke(); }
      pts.push([x, y, k]);
    });
    /* clickable points on top, ringed, so the bulk never hides them */
    ctx.strokeStyle = "#1d232b"; ctx.lineWidth = 1.5;
    pts.forEach(function (q) { if (q[2] in tree) { ctx.beginPath(); ctx.arc(q[0], q[1], 4.5, 0, 6.3); ctx.stroke(); } });
    ctx.lineWidth = 1;
    ctx.restore();
    if (drag && drag.x1 !== undefined) {
      ctx.fillStyle = "rgba(11,92,173,.12)"; ctx.strokeStyle = "#0b5cad";
      ctx.fillRect(Math.min(drag.x0, drag.x1), Math.min(drag.y0, drag.y1), Math.abs(drag.x1 - drag.x0), Math.abs(drag.y1 - drag.y0));
      ctx.strokeRect(Math.min(drag.x0, drag.x1), Math.min(drag.y0, drag.y1), Math.abs(drag.x1 - drag.x0), Math.abs(drag.y1 - drag.y0));
    }
    /* summary: the root function's figures as computed beside the Profile
     * (the JSON tree's root row); the page computes none of its own */
    var stats = document.getElementById("lat-stats"), R = root >= 0 && S.root_stats ? S.root_stats[root] : null;
    var c = FT.mode === "corr" && R && R.callsc !== undefined, mark = c && R.approx ? "\u2248" : "";
    stats.textContent = FT.count(vals.length) + " call" + (vals.length === 1 ? "" : "s") + " plotted in view" +
      (R ? "; " + S.roots[root] + ", all " + FT.count(c ? R.callsc : R.calls) + " " + (c ? "clean " : "") + "calls (" + FT.modeLabel() + "): p50 " +
        mark + FT.time(c ? R.p50c : R.p50) + ", p99 " + mark + FT.time(c ? R.p99c : R.p99) + ", max " + mark + FT.time(c ? R.maxc : R.max) : "");
    canvas.setAttribute("data-points", pts.length);
  }

  /* the point under the pointer; a clickable one wins within its ring's reach */
  function nearest(px, py) {
    var best = -1, bd = 64, tb = -1, td = 81;
    for (var k = 0; k < pts.length; k++) {
      var dx = pts[k][0] - px, dy = pts[k][1] - py, dd = dx * dx + dy * dy;
      if (dd < bd) { bd = dd; best = pts[k][2]; }
      if (dd < td && pts[k][2] in tree) { td = dd; tb = pts[k][2]; }
    }
    return tb >= 0 ? tb : best;
  }
  function pos(ev) { var r = canvas.getBoundingClientRect(); return [ev.clientX - r.left, ev.clientY - r.top]; }
  canvas.addEventListener("mousedown", function (ev) { var p = pos(ev); drag = { x0: p[0], y0: p[1] }; });
  canvas.addEventListener("mousemove", function (ev) {
    var p = pos(ev);
    if (drag) { drag.x1 = p[0]; drag.y1 = p[1]; FT.hideTip(); draw(); return; }
    var k = nearest(p[0], p[1]);
    if (k < 0) { FT.hideTip(); return; }
    FT.showTip(ev, function (t) {
      t.appendChild(FT.el("b", null, S.roots[S.root[k]]));
      /* the trace clock, as the slowest-calls table and the other outputs print it */
      var rows = [["start", ((S.t0 + S.t[k]) / 1e9).toFixed(6) + " s (trace clock)"],
        ["", FT.time(S.t[k]) + " after the first event"], ["duration (raw)", FT.time(S.dur[k])]];
      if (S.durc) rows.push(["duration (corrected)", FT.time(S.durc[k])]);
      rows.push(["pid / cpu", S.pid[k] + " / " + S.cpu[k]]);
      if (S.flags[k] & GAP) rows.push(["", "spans " + (FT.data.header.gap_causes || "a gap")]);
      if (k in tree) rows.push(["", "click: its call tree"]);
      else if (FT.data.slowest.some(function (c) { return c.sample === S.sample[k]; })) rows.push(["", "among the slowest: its tree is in the JSON report, not in this page"]);
      t.appendChild(FT.tipTable(rows));
    });
  });
  window.addEventListener("mouseup", function () {
    if (!drag) return;
    var d = drag;
    drag = null;
    if (d.x1 === undefined || (Math.abs(d.x1 - d.x0) <= 4 && Math.abs(d.y1 - d.y0) <= 4)) {
      /* a click on a point: that call's own tree, when it was kept */
      var k = nearest(d.x0, d.y0);
      if (k in tree && FT.calls) { draw(); FT.calls.open(S.sample[k]); return; }
      if (k >= 0) {  /* a click that opens nothing says why, where the reader looks */
        document.getElementById("lat-click").textContent = "No call tree for that point in this page: ringed points open theirs. " +
          "The trace keeps the trees of the slowest root calls by raw and by corrected duration (ftflame --slowest N per root function and operation); the JSON report's slowest[] has them all.";
        return;
      }
    }
    if (d.x1 !== undefined && Math.abs(d.x1 - d.x0) > 4) {
      var nx0 = ix(Math.min(d.x0, d.x1)), nx1 = ix(Math.max(d.x0, d.x1));
      var v = { x0: nx0, x1: nx1, y0: view.y0, y1: view.y1 };
      if (Math.abs(d.y1 - d.y0) > 4) { v.y0 = iy(Math.max(d.y0, d.y1)); v.y1 = iy(Math.min(d.y0, d.y1)); }
      view = v;
    }
    draw();
  });
  canvas.addEventListener("mouseleave", FT.hideTip);
  canvas.addEventListener("dblclick", function () { view = null; draw(); });
  document.getElementById("lat-reset").addEventListener("click", function () { view = null; draw(); });
  sel.addEventListener("change", function () { root = +sel.value; view = null; draw(); });
  function setLog(on) {
    logY = on; view = null;
    document.getElementById("lat-log").classList.toggle("on", on);
    document.getElementById("lat-lin").classList.toggle("on", !on);
    draw();
  }
  document.getElementById("lat-log").addEventListener("click", function () { setLog(true); });
  document.getElementById("lat-lin").addEventListener("click", function () { setLog(false); });
  FT.onMode(function () { view = null; draw(); });
  var rt = 0;
  window.addEventListener("resize", function () { clearTimeout(rt); rt = setTimeout(draw, 100); });
  var note = document.getElementById("lat-note");
  if (!S.total) note.textContent = "No root calls in this trace.";
  else if (S.shown < S.total) note.textContent = "Showing " + FT.count(S.shown) + " of " + FT.count(S.total) +
    " root calls: per root function and time bin the slowest and the fastest call are kept, and the slowest calls overall, so stalls and outliers stay visible.";
  else note.textContent = FT.count(S.total) + " root calls. A root call is an outermost traced call of a task (set_graph_function).";

  return { draw: draw, view: function () { return view; }, points: function () { return pts; }, clickable: function (k) { return k in tree; }, setRoot: function (k) { root = k; sel.value = k; view = null; draw(); }, init: draw };
})();
