/* Function table (sortable, filterable, a sparkline histogram per row) and the
 * function detail panel (log-scale histogram, callers, callees). */
FT.functions = (function () {
  var F = FT.data.functions, funcs = FT.data.funcs, edges = FT.data.edges;
  var R = F.func.length, LIMIT = 150, i;
  var rowOf = {};
  for (i = 0; i < R; i++) rowOf[F.func[i]] = i;
  var bigcorr = {};
  (F.bigcorr || []).forEach(function (r) { bigcorr[r] = 1; });

  /* Every figure is computed beside the Profile (report/html.py): the page
   * prints them and computes none. Corrected min/percentiles/max marked
   * approximate (F.corr.approx) are estimates; the JSON says so too. */
  var C = F.corr || null, approx = {};
  if (C) C.approx.forEach(function (r) { approx[r] = 1; });
  function corr() { return FT.mode === "corr" && !!F.inclc; }
  function stat(q, r) { return corr() ? (C ? C[q][r] : null) : F[q][r]; }
  function isApprox(r) { return corr() && !!approx[r]; }
  var COLS = [
    { key: "name", label: "Function", cls: "name", get: function (r) { return funcs[F.func[r]]; } },
    { key: "calls", label: "Calls", get: function (r) { return corr() ? F.callsc[r] : F.calls[r]; },
      fmt: function (v, r) {
        /* corrected figures over fewer calls than measured: say so in the cell */
        return corr() && F.callsc[r] !== F.calls[r] ? FT.count(v) + " of " + FT.count(F.calls[r]) : FT.count(v);
      } },
    { key: "incl", label: "Total", unit: true, pm: "sum", get: function (r) { return corr() ? F.inclc[r] : F.incl[r]; } },
    { key: "excl", label: "Self", unit: true, pm: "self", get: function (r) { return corr() ? F.exclc[r] : F.excl[r]; } },
    { key: "avg", label: "Avg", unit: true, pm: "mean", get: function (r) { return stat("mean", r); } },
    { key: "p50", label: "p50", unit: true, approx: true, pm: "p50", get: function (r) { return stat("p50", r); } },
    { key: "p99", label: "p99", unit: true, approx: true, pm: "p99", get: function (r) { return stat("p99", r); } },
    { key: "max", label: "Max", unit: true, approx: true, pm: "max", get: function (r) { return stat("max", r); } },
    { key: "irq", label: "irq", unit: true, raw: true, title: "time in interrupt subtrees nested inside the calls (measured)", get: function (r) { return F.irq[r]; } },
    { key: "off", label: "off-CPU", unit: true, raw: true, title: "time switched out inside the calls (sched_switch; measured; \u2013 when the trace has no sched_switch events)", get: function (r) { return F.off ? F.off[r] : null; } },
    { key: "hist", label: "Distribution", cls: "spark", title: "inclusive time per call, log scale (raw)", nosort: true }
  ];
  var sortKey = "incl", sortDir = -1, filter = null, showAll = false, selected = -1;
  var table = document.getElementById("fn-table"), thead = table.tHead, tbody = table.tBodies[0];

  /* sparkline geometry: one global log axis, so rows compare */
  var edgesNs = F.hist_edges, spanLo = Infinity, spanHi = -Infinity;
  F.hist.forEach(function (h) {
    if (h.length > 1) { spanLo = Math.min(spanLo, h[0]); spanHi = Math.max(spanHi, h[0] + h.length - 1); }
  });
  function sparkline(r) {
    var h = F.hist[r], W = 120, H = 18, svgNS = "http://www.w3.org/2000/svg";
    var svg = document.createElementNS(svgNS, "svg");
    svg.setAttribute("width", W); svg.setAttribute("height", H); svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    if (h.length < 2 || !isFinite(spanLo)) return svg;
    var n = spanHi - spanLo + 1, bw = W / n, max = 0, k, d = "";
    for (k = 1; k < h.length; k++) if (h[k] > max) max = h[k];
    for (k = 1; k < h.length; k++) {
      if (!h[k]) continue;
      var x = (h[0] + k - 1 - spanLo) * bw, bh = Math.max(1, Math.round((H - 1) * Math.sqrt(h[k] / max)));
      d += "M" + x.toFixed(1) + " " + H + "h" + Math.max(bw, 0.8).toFixed(2) + "v-" + bh + "h-" + Math.max(bw, 0.8).toFixed(2) + "z";
    }
    var p = document.createElementNS(svgNS, "path");
    p.setAttribute("d", d); p.setAttribute("fill", "#5b7fa6");
    svg.appendChild(p);
    var t = document.createElementNS(svgNS, "title");
    t.textContent = FT.time(edgesNs[h[0]]) + " \u2026 " + FT.time(edgesNs[h[0] + h.length - 1]) + " (bar height: sqrt of calls)";
    svg.appendChild(t);
    return svg;
  }

  function header() {
    FT.clear(thead);
    var tr = FT.el("tr");
    COLS.forEach(function (c) {
      var th = FT.el("th", { class: (c.cls || "") + (c.nosort ? "" : " sortable"), "data-key": c.key });
      th.appendChild(document.createTextNode(c.label + (c.key === sortKey ? (sortDir > 0 ? " \u25b2" : " \u25bc") : "")));
      if (c.unit) th.appendChild(FT.el("span", { class: "colmode" }, "\u00b5s " + (c.raw ? "measured" : FT.modeLabel())));
      if (c.title) th.title = c.title;
      if (!c.nosort) {
        th.setAttribute("aria-sort", c.key === sortKey ? (sortDir > 0 ? "ascending" : "descending") : "none");
        th.addEventListener("click", function () {
          if (sortKey === c.key) sortDir = -sortDir;
          else { sortKey = c.key; sortDir = c.key === "name" ? 1 : -1; }
          render();
        });
      }
      tr.appendChild(th);
    });
    thead.appendChild(tr);
  }

  function rows() {
    var out = [], col = COLS.filter(function (c) { return c.key === sortKey; })[0];
    for (var r = 0; r < R; r++) if (!filter || filter(funcs[F.func[r]])) out.push(r);
    var vals = {};
    out.forEach(function (r) { vals[r] = col.get(r); });
    out.sort(function (a, b) {
      var x = vals[a], y = vals[b];
      if (x < y) return -sortDir;
      if (x > y) return sortDir;
      return a - b;
    });
    return out;
  }

  function render() {
    header();
    FT.clear(tbody);
    var list = rows(), n = showAll ? list.length : Math.min(list.length, LIMIT);
    var frag = document.createDocumentFragment();
    for (var k = 0; k < n; k++) {
      var r = list[k], tr = FT.el("tr", { "data-func": F.func[r] });
      if (F.func[r] === selected) tr.className = "sel";
      COLS.forEach(function (c) {
        if (c.key === "hist") { var td = FT.el("td", { class: "spark" }); td.appendChild(sparkline(r)); tr.appendChild(td); return; }
        var v = c.get(r), cell = FT.el("td", c.cls ? { class: c.cls } : null);
        if (c.key === "name") {
          cell.textContent = v;
          if (corr() && bigcorr[r]) cell.appendChild(FT.el("span", { class: "warn", title: "the hook cost taken out is more than half of this function's measured time: its corrected figures rest mostly on the calibration" }, " \u26a0"));
        } else {
          cell.textContent = c.fmt ? c.fmt(v, r) : FT.us(v);
          if (c.approx && isApprox(r)) { cell.className = "approx"; cell.title = FT.APPROX_NOTE; }
          /* the 95% interval of this figure (JSON "intervals"), with what it holds */
          if (corr() && C && C.pm && c.pm) cell.title = (cell.title ? cell.title + "; " : "") +
            FT.pm(C.pm[c.pm][r]);
        }
        tr.appendChild(cell);
      });
      frag.appendChild(tr);
    }
    tbody.appendChild(frag);
    var more = document.getElementById("fn-more");
    more.hidden = list.length <= LIMIT || showAll;
    more.textContent = "show all " + FT.count(list.length);
    document.getElementById("fn-count").textContent = (filter ? FT.count(list.length) + " of " : "") + FT.count(R) + " functions" +
      (n < list.length ? ", first " + FT.count(n) + " shown" : "");
    table.setAttribute("data-rows", n);
  }

  tbody.addEventListener("click", function (ev) {
    var tr = ev.target.closest("tr");
    if (tr) open(+tr.getAttribute("data-func"));
  });
  var fbox = document.getElementById("fn-filter"), ft = 0;
  fbox.addEventListener("input", function () {
    clearTimeout(ft);
    ft = setTimeout(function () { filter = FT.matcher(fbox.value); render(); }, 120);
  });
  document.getElementById("fn-more").addEventListener("click", function () { showAll = true; render(); });
  document.getElementById("fn-note").textContent = "Per function, over every call path it appears in (recursive calls each count). " +
    "Click a column to sort, a row for its detail. Times in \u00b5s, " + (FT.calibrated ?
      "raw or corrected as the switch at the top says; \u2248 marks an estimate: " + FT.APPROX_NOTE + "; " +
      "in corrected mode Calls says \u201cN of M\u201d when the corrected figures cover only the N clean calls." :
      "RAW: no calibration, the tracer's hook cost is included.");

  /* ---- detail panel ---- */
  var panel = document.getElementById("detail");
  function open(f) {
    var r = rowOf[f];
    if (r === undefined) return;
    selected = f;
    Array.prototype.forEach.call(tbody.rows, function (tr) { tr.classList.toggle("sel", +tr.getAttribute("data-func") === f); });
    FT.clear(panel);
    var name = funcs[f];
    panel.setAttribute("data-func", f);
    var close = FT.el("button", { type: "button", class: "close" }, "Close \u2715");
    close.addEventListener("click", closePanel);
    panel.appendChild(close);
    panel.appendChild(FT.el("h2", null, name));
    var bar = FT.el("div", { class: "toolbar" });
    var find = FT.el("button", { type: "button" }, "Highlight in flame graph");
    find.addEventListener("click", function () {
      var s = document.getElementById("flame-search");
      s.value = "/^" + FT.escapeRegex(name) + "$/";
      FT.flame.search(s.value);
      closePanel();
      document.getElementById("flame").scrollIntoView();
    });
    bar.appendChild(find);
    bar.appendChild(FT.el("span", { class: "badge " + (FT.mode === "corr" ? "corr" : "raw") }, FT.mode === "corr" ? "CORRECTED" : "RAW"));
    panel.appendChild(bar);

    /* statistics, raw and corrected side by side (all from the data block) */
    var both = !!F.inclc;
    var st = FT.el("table", { class: "plain", id: "detail-stats" }), tr = FT.el("tr");
    tr.appendChild(FT.el("th", null, ""));
    tr.appendChild(FT.el("th", null, "raw"));
    if (both) tr.appendChild(FT.el("th", null, "corrected"));
    st.appendChild(tr);
    function srow(label, raw, cor, fmt, est) {
      var t = FT.el("tr", { "data-stat": label });
      t.appendChild(FT.el("th", null, label));
      t.appendChild(FT.el("td", null, fmt(raw)));
      if (both) {
        var td = FT.el("td", est ? { class: "approx", title: FT.APPROX_NOTE } : null, cor === null ? "" : fmt(cor));
        t.appendChild(td);
      }
      st.appendChild(t);
    }
    srow("calls", F.calls[r], both ? F.callsc[r] : null, FT.count);
    srow("total (inclusive)", F.incl[r], both ? F.inclc[r] : null, FT.time);
    srow("self (exclusive)", F.excl[r], both ? F.exclc[r] : null, FT.time);
    srow("mean", F.mean[r], both && C ? C.mean[r] : null, FT.time);
    ["min", "p50", "p90", "p99", "max"].forEach(function (q) {
      srow(q, F[q][r], both && C ? C[q][r] : null, FT.time, both && !!approx[r]);
    });
    srow("in interrupts", F.irq[r], null, FT.time);
    srow("off-CPU", F.off ? F.off[r] : null, null, FT.time);
    srow("calls spanning a gap", F.gap[r], null, FT.count);
    if (F.ret) {
      /* return values: the calls that returned an error code (-4095..-1) apart, raw */
      var R = F.ret;
      srow("calls with a return value", R.calls[r], null, FT.count);
      srow("returned an error code", R.err[r], null, FT.count);
      if (R.err[r]) { srow("error calls: mean", R.err_mean[r], null, FT.time); srow("error calls: max", R.err_max[r], null, FT.time); }
      if (R.calls[r] > R.err[r]) { srow("the others: mean", R.ok_mean[r], null, FT.time); srow("the others: max", R.ok_max[r], null, FT.time); }
    }
    panel.appendChild(st);
    if (both) panel.appendChild(FT.el("div", { class: "note" }, "Corrected figures cover the " + FT.count(F.callsc[r]) + " clean calls" +
      (F.callsc[r] !== F.calls[r] ? " of " + FT.count(F.calls[r]) + " (gap calls left out): raw and corrected columns are over different calls" : "") +
      ". Corrected sums and means are exact; " + (approx[r] ? "\u2248 marks an estimate: " + FT.APPROX_NOTE + "." :
      "min/percentiles/max are exact (every call's corrected time is known).")));

    /* histogram */
    panel.appendChild(FT.el("h3", null, "Inclusive time per call (raw, log scale)"));
    var box = FT.el("div", { class: "plotbox" }), cv = FT.el("canvas", { id: "detail-hist" });
    box.appendChild(cv);
    panel.appendChild(box);

    var sw = sandwich(f);
    /* callers and callees */
    var callers = [], callees = [], k;
    for (k = 0; k < edges.length; k++) {
      if (edges[k][1] === f) callers.push(edges[k]);
      if (edges[k][0] === f) callees.push(edges[k]);
    }
    var cols = FT.el("div", { class: "cols" });
    cols.appendChild(edgeTable("Callers", callers, 0, r));
    cols.appendChild(edgeTable("Callees", callees, 1, r));
    panel.appendChild(cols);
    /* below the section bar: the Raw/Corrected switch stays in reach */
    var nav = document.querySelector("nav.sections");
    panel.style.top = (nav ? Math.max(nav.getBoundingClientRect().bottom, 0) : 0) + "px";
    panel.classList.add("open");
    drawHist(cv, r);
    if (sw) sw();
  }

  /* ---- sandwich: the function's callers (above it) and callees (below),
   * each merged over every call path it is on (FT.data.sandwich, computed
   * beside the Profile: ftflame/model/sandwich.py); drawn, never summed here */
  var SW = {};
  (FT.data.sandwich || []).forEach(function (e) {
    ["callers", "callees"].forEach(function (side) {
      var T = e[side];
      T.parent = T.up.map(function (u, i) { return i ? i - u : -1; });
    });
    SW[e.func] = e;
  });
  /* A function the page carries no sandwich for (it carries the busiest
   * functions'): merged here from the flame graph's frames, which are the
   * Profile's call paths but those under its drawing threshold (merged into
   * [N small frames]: their time is counted as not drawn). Sums of figures
   * the page holds, no new statistic. */
  function fromFlame(f) {
    var D = FT.data.flame, fl = FT.flame;
    if (!fl || !D || !D.func.length) return null;
    var N = D.func.length, par = fl.parent, depth = D.depth;
    function table() {
      return { func: [f], incl: [0], calls: [0], inclc: D.inclc ? [0] : null, parent: [-1], undrawn: 0, key: {} };
    }
    var up = table(), down = table(), found = 0;
    function row(T, at, func) {
      var k = at + ":" + func, r = T.key[k];
      if (r === undefined) {
        r = T.key[k] = T.func.length;
        T.func.push(func); T.incl.push(0); T.calls.push(0); T.parent.push(at);
        if (T.inclc) T.inclc.push(0);
      }
      return r;
    }
    function add(T, r, j) {
      T.incl[r] += D.incl[j]; T.calls[r] += D.calls[j];
      if (T.inclc) T.inclc[r] += D.inclc[j];
    }
    for (var i = 0; i < N; i++) {
      if (D.func[i] !== f) continue;
      var a, inner = false;
      for (a = par[i]; a >= 0; a = par[a]) if (D.func[a] === f) { inner = true; break; }
      if (inner) continue;  /* a recursive function counts at its outermost call */
      found++;
      add(up, 0, i);
      add(down, 0, i);
      for (var r = 0, c = par[i]; c >= 0 && D.func[c] >= 0; c = par[c]) { r = row(up, r, D.func[c]); add(up, r, i); }
      var rowOfFrame = {};
      rowOfFrame[i] = 0;
      for (var j = i + 1; j < N && depth[j] > depth[i]; j++) {
        var pr = rowOfFrame[par[j]];
        if (pr === undefined) continue;  /* under a frame not drawn here */
        if (D.func[j] < 0) continue;  /* [N small frames], off-CPU, context: said in the note */
        rowOfFrame[j] = row(down, pr, D.func[j]);
        add(down, rowOfFrame[j], j);
      }
    }
    if (!found) return null;
    [up, down].forEach(function (T) {
      delete T.key;
      T.up = T.parent.map(function (q, k) { return k ? k - q : 0; });
    });
    return { func: f, callers: up, callees: down, fromFlame: true };
  }
  /* ...else its direct callers and callees, each merged over every call
   * path (FT.data.edges: exact sums), one level each way */
  function fromEdges(f) {
    var r = rowOf[f];
    if (r === undefined) return null;
    function table() {
      return { func: [f], incl: [F.incl[r]], calls: [F.calls[r]], inclc: F.inclc ? [F.inclc[r]] : null, parent: [-1], up: [0], undrawn: 0 };
    }
    var up = table(), down = table();
    edges.forEach(function (g) {
      if (g[0] === g[1]) return;  /* recursion: inside the outermost call's time */
      var T = g[1] === f && g[0] >= 0 ? up : g[0] === f ? down : null;
      if (!T) return;
      T.func.push(T === up ? g[0] : g[1]); T.calls.push(g[2]); T.incl.push(g[3]); T.parent.push(0); T.up.push(T.func.length - 1);
      if (T.inclc) T.inclc.push(g.length > 4 ? g[4] : g[3]);
    });
    return { func: f, callers: up, callees: down, fromEdges: true };
  }
  function sandwich(f) {
    var e = SW[f] || fromFlame(f) || fromEdges(f), RH = 17;
    panel.appendChild(FT.el("h3", null, "Sandwich: callers above, callees below, merged over every call path"));
    if (!e) {
      panel.appendChild(FT.el("div", { class: "note", id: "sandwich-none" }, "Not in this page: " + funcs[f] + " is not in the function table."));
      return null;
    }
    if (e.fromEdges) {
      panel.appendChild(FT.el("div", { class: "note", id: "sandwich-from-edges" }, "One level each way: every call path of " + funcs[f] +
        " is under the flame graph's drawing threshold (" + FT.time(FT.data.flame.threshold_ns) +
        "), so its direct callers and callees, each summed over every path."));
    }
    if (e.fromFlame) {
      panel.appendChild(FT.el("div", { class: "note", id: "sandwich-from-flame" }, "Merged from the flame graph's call paths" +
        (FT.data.flame.paths_shown < FT.data.flame.paths_total ? " (those under " + FT.time(FT.data.flame.threshold_ns) +
          " are merged into [N small frames] and not drawn here)" : "") + "."));
    }
    var box = FT.el("div", { class: "plotbox" }), cv = FT.el("canvas", { id: "sandwich-canvas", "data-func": f });
    box.appendChild(cv);
    panel.appendChild(box);
    var undrawn = e.callers.undrawn + e.callees.undrawn;
    panel.appendChild(FT.el("div", { class: "note" }, "Widths: raw time (hover for corrected), the function’s whole time across; a recursive function counts at its outermost call." +
      (undrawn ? " " + FT.count(undrawn) + " merged calls under 1% of its time not drawn (their time stays in their caller’s box)." : "") + " Click a box for that function."));
    var boxes = [];
    function layout(T, dir, base, w, top) {
      /* x of each row: its caller's start plus the rows before it among its siblings (largest first) */
      var n = T.func.length, x = new Float64Array(n), d = new Int32Array(n), next = new Float64Array(n), i, kids = [];
      for (i = 0; i < n; i++) kids.push([]);
      for (i = 1; i < n; i++) kids[T.parent[i]].push(i);
      var scale = T.incl[0] > 0 ? w / T.incl[0] : 0, order = [0];
      for (var q = 0; q < order.length; q++) {
        var j = order[q];
        kids[j].sort(function (a, b) { return T.incl[b] - T.incl[a] || a - b; });
        next[j] = x[j];
        kids[j].forEach(function (k) { x[k] = next[j]; next[j] += T.incl[k] * scale; d[k] = d[j] + 1; order.push(k); });
      }
      for (i = top ? 0 : 1; i < n; i++) boxes.push({ T: T, i: i, x: x[i], y: base + dir * d[i] * RH, w: T.incl[i] * scale });
    }
    function depthOf(T) {
      var d = [0], m = 0;
      for (var i = 1; i < T.func.length; i++) { d.push(d[T.parent[i]] + 1); if (d[i] > m) m = d[i]; }
      return m;
    }
    return function () {
      var up = depthOf(e.callers), down = depthOf(e.callees), h = (up + down + 1) * RH + 4;
      var fit = FT.fitCanvas(cv, h), ctx = fit.ctx, mid = up * RH + 2;
      boxes = [];
      layout(e.callers, -1, mid, fit.w, true);
      layout(e.callees, 1, mid, fit.w, false);
      ctx.clearRect(0, 0, fit.w, fit.h);
      ctx.font = "11px " + getComputedStyle(document.body).getPropertyValue("--mono");
      ctx.textBaseline = "middle";
      boxes.forEach(function (b) {
        if (b.w < 0.3) return;
        var name = funcs[b.T.func[b.i]];
        ctx.fillStyle = b.i === 0 ? "#c3c8cf" : FT.color(name, "task");
        ctx.fillRect(b.x, b.y, Math.max(b.w - 0.5, 0.3), RH - 1);
        if (b.w > 30) {
          ctx.save(); ctx.beginPath(); ctx.rect(b.x, b.y, b.w, RH); ctx.clip();
          ctx.fillStyle = "#111"; ctx.fillText(name, b.x + 3, b.y + RH / 2); ctx.restore();
        }
      });
      cv.setAttribute("data-rows", boxes.length);
      function hit(ev) {
        var r = cv.getBoundingClientRect(), px = ev.clientX - r.left, py = ev.clientY - r.top;
        for (var k = boxes.length - 1; k >= 0; k--) {
          var b = boxes[k];
          if (px >= b.x && px <= b.x + Math.max(b.w, 1) && py >= b.y && py < b.y + RH) return b;
        }
        return null;
      }
      cv.onmousemove = function (ev) {
        var b = hit(ev);
        if (!b) { FT.hideTip(); return; }
        FT.showTip(ev, function (t) {
          var T = b.T, i = b.i, side = T === e.callers ? "caller" : "callee";
          t.appendChild(FT.el("b", null, funcs[T.func[i]]));
          var rows = [["calls", FT.count(T.calls[i])], ["inclusive (raw)", FT.time(T.incl[i])]];
          if (T.inclc) rows.push(["inclusive (corrected)", FT.time(T.inclc[i])]);
          rows.push(["share of " + funcs[f], FT.pct(100 * T.incl[i] / (T.incl[0] || 1))]);
          t.appendChild(FT.tipTable(rows));
          if (i) t.appendChild(FT.el("div", { class: "hint" }, side === "caller" ?
            "the time of " + funcs[f] + " called through this chain" : "the time in this callee, under " + funcs[f] + ", on every path"));
        });
      };
      cv.onmouseleave = FT.hideTip;
      cv.onclick = function (ev) { var b = hit(ev); if (b && b.i) { FT.hideTip(); open(b.T.func[b.i]); } };
    };
  }
  function edgeTable(title, list, other, r) {
    var div = FT.el("div"), useCorr = FT.mode === "corr" && list.length && list[0].length > 4;
    var total = useCorr ? F.inclc[r] : F.incl[r];
    div.appendChild(FT.el("h3", null, title + " (" + list.length + ")"));
    list.sort(function (a, b) { return (useCorr ? b[4] - a[4] : b[3] - a[3]) || a[other] - b[other]; });
    var t = FT.el("table", { class: "plain", id: "detail-" + title.toLowerCase() }), h = FT.el("tr");
    ["function", "calls", FT.modeLabel() + " \u00b5s", "share"].forEach(function (x) { h.appendChild(FT.el("th", null, x)); });
    t.appendChild(h);
    list.slice(0, 60).forEach(function (e) {
      var tr = FT.el("tr"), td = FT.el("td", { class: "name" }), v = useCorr ? e[4] : e[3];
      if (e[other] < 0) td.textContent = "(root)";
      else {
        var a = FT.el("a", null, funcs[e[other]]);
        a.addEventListener("click", function () { open(e[other]); });
        td.appendChild(a);
      }
      tr.appendChild(td);
      /* corrected: the clean calls the corrected time covers */
      tr.appendChild(FT.el("td", null, FT.count(useCorr ? e[5] : e[2])));
      tr.appendChild(FT.el("td", null, FT.us(v)));
      tr.appendChild(FT.el("td", null, FT.pct(100 * v / (total || 1))));
      t.appendChild(tr);
    });
    div.appendChild(t);
    if (list.length > 60) div.appendChild(FT.el("div", { class: "note" }, "first 60 of " + list.length));
    if (list.length) div.appendChild(FT.el("div", { class: "note" }, title === "Callers" ?
      "share: of this function's total time, the part called from there" :
      "share: of this function's total time, the part spent in the callee (with its callees)"));
    return div;
  }
  function drawHist(cv, r) {
    var h = F.hist[r], fit = FT.fitCanvas(cv, 200), ctx = fit.ctx, L = 46, B = 30, T = 8, Rm = 10;
    var w = fit.w - L - Rm, hh = fit.h - T - B;
    ctx.font = "11px system-ui, sans-serif";
    ctx.fillStyle = "#5b6573";
    if (h.length < 2) { ctx.fillText("no completed calls", L, T + 20); return; }
    var lo = edgesNs[h[0]], hi = edgesNs[h[0] + h.length - 1];
    var llo = Math.log10(Math.max(lo, 1)), lhi = Math.log10(Math.max(hi, lo + 1, 2));
    if (lhi - llo < 1) { llo = Math.floor(llo); lhi = Math.max(lhi, llo + 1); }
    var max = 0, k;
    for (k = 1; k < h.length; k++) if (h[k] > max) max = h[k];
    function X(ns) { return L + w * (Math.log10(Math.max(ns, 1)) - llo) / (lhi - llo); }
    /* axes */
    ctx.strokeStyle = "#c9cfd6"; ctx.beginPath(); ctx.moveTo(L, T); ctx.lineTo(L, T + hh); ctx.lineTo(L + w, T + hh); ctx.stroke();
    ctx.textAlign = "center";
    FT.logTicks(Math.pow(10, llo), Math.pow(10, lhi)).forEach(function (v) {
      var x = X(v);
      ctx.strokeStyle = "#eceff2"; ctx.beginPath(); ctx.moveTo(x, T); ctx.lineTo(x, T + hh); ctx.stroke();
      ctx.fillText(FT.short(v), Math.min(Math.max(x, L + 14), L + w - 14), T + hh + 14);
    });
    ctx.textAlign = "right";
    ctx.fillText(FT.count(max), L - 4, T + 8);
    ctx.fillText("0", L - 4, T + hh);
    ctx.save(); ctx.translate(10, T + hh / 2); ctx.rotate(-Math.PI / 2); ctx.textAlign = "center"; ctx.fillText("calls", 0, 0); ctx.restore();
    ctx.fillStyle = "#4f76a3";
    for (k = 1; k < h.length; k++) {
      if (!h[k]) continue;
      var b = h[0] + k - 1, x0 = X(edgesNs[b]), x1 = X(edgesNs[b + 1]), bh = hh * h[k] / max;
      ctx.fillRect(x0, T + hh - bh, Math.max(x1 - x0 - 0.5, 1), bh);
    }
    [["p50", F.p50[r], "#1b7f3b"], ["p99", F.p99[r], "#d9480f"]].forEach(function (q) {
      var x = X(q[1]);
      ctx.strokeStyle = q[2]; ctx.setLineDash([4, 3]); ctx.beginPath(); ctx.moveTo(x, T); ctx.lineTo(x, T + hh); ctx.stroke(); ctx.setLineDash([]);
      ctx.fillStyle = q[2]; ctx.textAlign = "left"; ctx.fillText(q[0] + " " + FT.time(q[1]), x + 3, T + 10 + (q[0] === "p99" ? 12 : 0));
    });
    ctx.fillStyle = "#5b6573"; ctx.textAlign = "right";
    ctx.fillText(FT.count(F.calls[r]) + " calls, 4 buckets per power of two", L + w, T + hh + 27);
  }
  function closePanel() {
    panel.classList.remove("open");
    panel.removeAttribute("data-func");
    selected = -1;
    Array.prototype.forEach.call(tbody.rows, function (tr) { tr.classList.remove("sel"); });
  }
  document.addEventListener("keydown", function (ev) { if (ev.key === "Escape" && panel.classList.contains("open")) closePanel(); });
  FT.onMode(function () { render(); if (selected >= 0) open(selected); });

  return { render: render, open: open, close: closePanel, rows: rows, cols: COLS, init: render };
})();
