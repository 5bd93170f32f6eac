/* Flame graph on a canvas: frames sized by time, click to zoom, breadcrumb to
 * zoom out, search with highlight, flame or icicle, raw or corrected widths. */
FT.flame = (function () {
  var D = FT.data.flame, funcs = FT.data.funcs, PARTIAL = FT.data.partial_flag;
  var N = D.depth.length, ROW = 17, PAD = 2, MINPX = 0.35;
  var depth = D.depth, parent = new Int32Array(N), end = new Int32Array(N), kind = new Uint8Array(N);
  var nsmall = {}, maxDepth = 0, i, stack = [], approx = {};
  if (D.corr) D.corr.approx.forEach(function (j) { approx[j] = 1; });
  for (i = 0; i < N; i++) {
    while (stack.length > depth[i]) stack.pop();
    parent[i] = i ? stack[stack.length - 1] : -1;
    stack.push(i);
    kind[i] = i === 0 ? 0 : 1;
    if (depth[i] > maxDepth) maxDepth = depth[i];
  }
  D.small.forEach(function (s) { kind[s[0]] = 2; nsmall[s[0]] = s[1]; });
  D.offcpu.forEach(function (j) { kind[j] = 3; });
  var ctxName = {};
  (D.context || []).forEach(function (c) { kind[c[0]] = 4; ctxName[c[0]] = c[1]; });
  for (i = 0; i < N; i++) end[i] = i + 1;
  for (i = N - 1; i > 0; i--) if (end[i] > end[parent[i]]) end[parent[i]] = end[i];
  var kids = [];
  for (i = 0; i < N; i++) kids.push([]);
  for (i = 1; i < N; i++) kids[parent[i]].push(i);

  function label(j) {
    if (kind[j] === 0) return "all";
    if (kind[j] === 2) return "[" + FT.count(nsmall[j]) + " small frames]";
    if (kind[j] === 3) return "[off-CPU]";
    if (kind[j] === 4) return ctxName[j];
    return funcs[D.func[j]];
  }
  var names = [];
  for (i = 0; i < N; i++) names.push(label(i));

  /* per mode: widths as computed beside the Profile (D.w, D.wc: a frame is
   * as wide as the figure its tooltip states; in corrected mode removed time
   * is not drawn, docs/html.md) and x offsets */
  var layouts = {}, OPS = D.ops || [], op = -1;
  /* one operation's view (D.ops, computed beside the Profile): its naming
   * functions' frames with their subtrees at their own widths, their
   * ancestors as wide as the data block says, every other frame width 0 */
  function opWidths(full, mode) {
    var W = new Float64Array(N), o = OPS[op], t, j;
    for (t = 0; t < o.tops.length; t++) for (j = o.tops[t]; j < end[o.tops[t]]; j++) W[j] = full[j];
    o.anc.forEach(function (a) { W[a[0]] = mode === "corr" && D.wc ? a[2] : a[1]; });
    return W;
  }
  function layout(mode) {
    var key = mode + ":" + op;
    if (layouts[key]) return layouts[key];
    var full = mode === "corr" && D.wc ? D.wc : D.w;
    var W = op >= 0 ? opWidths(full, mode) : Float64Array.from(full), X = new Float64Array(N), j, k;
    var order = kids.map(function (ks) {
      return ks.slice().sort(function (a, b) {
        var ka = kind[a] === 2 ? 2 : kind[a] === 3 ? 1 : 0, kb = kind[b] === 2 ? 2 : kind[b] === 3 ? 1 : 0;
        return ka - kb || W[b] - W[a] || a - b;
      });
    });
    for (j = 0; j < N; j++) {
      var x = X[j], ks = order[j];
      for (k = 0; k < ks.length; k++) { X[ks[k]] = x; x += W[ks[k]]; }
    }
    layouts[key] = { W: W, X: X };
    return layouts[key];
  }

  var canvas = document.getElementById("flame-canvas"), box = document.getElementById("flame-box");
  var zoom = 0, orient = "flame", matched = null, hits = [], lastFit = null, hatch = null, shown = maxDepth;
  var stats = { frames: 0, functions: 0, percent: 0 };

  /* rows up to the deepest frame drawn (`shown`), not the deepest of the
   * tree: frames too narrow to draw, or of width 0 in this mode or
   * operation (corrected: removed time), take no row */
  function rowY(d) { return orient === "icicle" ? PAD + d * ROW : PAD + (shown - d) * ROW; }
  function height() { return (shown + 1) * ROW + 2 * PAD; }
  function deepestDrawn(W, scale) {
    var top = depth[zoom];
    for (var j = zoom; j < end[zoom];) {
      if (!(W[j] * scale >= MINPX)) { j = end[j]; continue; }
      if (depth[j] > top) top = depth[j];
      j++;
    }
    return top;
  }
  function fill(ctx, j) {
    if (matched && matched[j]) return FT.MATCH;
    if (kind[j] === 0) return "#c3c8cf";
    if (kind[j] === 2) return FT.color("", "small");
    if (kind[j] === 3) return hatch;
    if (D.flags[j] & 1) return FT.color(names[j], "irq");
    if (D.flags[j] & PARTIAL) return FT.color(names[j], "partial");
    return FT.color(names[j], "task");
  }
  function makeHatch(ctx) {
    var c = document.createElement("canvas");
    c.width = c.height = 6;
    var g = c.getContext("2d");
    g.fillStyle = "#aeb7c1"; g.fillRect(0, 0, 6, 6);
    g.strokeStyle = "#6b7682"; g.lineWidth = 1.2;
    g.beginPath(); g.moveTo(0, 6); g.lineTo(6, 0); g.moveTo(-3, 3); g.lineTo(3, -3); g.moveTo(3, 9); g.lineTo(9, 3); g.stroke();
    return ctx.createPattern(c, "repeat");
  }

  function draw() {
    var L = layout(FT.mode), cw = box.clientWidth || 800;
    shown = deepestDrawn(L.W, L.W[zoom] > 0 ? cw / L.W[zoom] : 0);
    /* a graph taller than its box scrolls inside it; flame orientation keeps
     * the bottom (the root) where it was, in view when first drawn */
    var fromBottom = box.scrollHeight - box.scrollTop;
    var fit = FT.fitCanvas(canvas, height()), ctx = fit.ctx;
    if (orient === "flame") box.scrollTop = box.scrollHeight - (lastFit ? fromBottom : box.clientHeight);
    lastFit = fit;
    if (!hatch) hatch = makeHatch(ctx);
    ctx.clearRect(0, 0, fit.w, fit.h);
    ctx.font = "11.5px " + getComputedStyle(document.body).getPropertyValue("--mono");
    ctx.textBaseline = "middle";
    var chw = ctx.measureText("mmmmmmmmmm").width / 10;
    hits = [];
    for (var d = 0; d <= maxDepth; d++) hits.push([]);
    var W = L.W, X = L.X, scale = W[zoom] > 0 ? fit.w / W[zoom] : 0, x0 = X[zoom];
    var anc = [];
    for (var a = parent[zoom]; a >= 0; a = parent[a]) anc.push(a);
    for (var k = anc.length - 1; k >= 0; k--) frame(ctx, anc[k], 0, fit.w, true, chw);
    for (var j = zoom; j < end[zoom];) {
      var pw = W[j] * scale;
      if (!(pw >= MINPX)) { j = end[j]; continue; }
      frame(ctx, j, (X[j] - x0) * scale, pw, false, chw);
      j++;
    }
    /* frameAt searches by x: frames come in pre-order, whose sibling order
     * (raw widths) is not the x order of the corrected layout */
    for (d = 0; d <= maxDepth; d++) hits[d].sort(function (a, b) { return a[0] - b[0]; });
  }
  function frame(ctx, j, px, pw, dim, chw) {
    var y = rowY(depth[j]);
    ctx.globalAlpha = dim ? 0.55 : 1;
    ctx.fillStyle = fill(ctx, j);
    ctx.fillRect(px, y, pw > 2 ? pw - 0.6 : pw, ROW - 1);
    if (pw > 26) {
      var maxc = Math.floor((pw - 6) / chw), s = names[j];
      if (maxc >= 3) {
        if (s.length > maxc) s = s.slice(0, maxc - 1) + "\u2026";
        ctx.fillStyle = kind[j] === 3 ? "#1d232b" : "#111";
        ctx.fillText(s, px + 3, y + ROW / 2);
      }
    }
    ctx.globalAlpha = 1;
    hits[depth[j]].push([px, pw, j]);
  }

  function frameAt(x, y) {
    var d = orient === "icicle" ? Math.floor((y - PAD) / ROW) : shown - Math.floor((y - PAD) / ROW);
    if (d < 0 || d > shown) return -1;
    var row = hits[d], lo = 0, hi = row.length - 1;
    while (lo <= hi) {
      var m = (lo + hi) >> 1, r = row[m];
      if (x < r[0]) hi = m - 1;
      else if (x >= r[0] + Math.max(r[1], 1)) lo = m + 1;
      else return r[2];
    }
    return -1;
  }
  function rectOf(j) {
    for (var d = 0; d < hits.length; d++)
      for (var k = 0; k < hits[d].length; k++)
        if (hits[d][k][2] === j) return { x: hits[d][k][0], y: rowY(d), w: hits[d][k][1], h: ROW - 1 };
    return null;
  }

  /* ---- zoom and breadcrumb ---- */
  function zoomTo(j) {
    if (j < 0 || j >= N) j = 0;
    zoom = j;
    crumbs();
    draw();
  }
  function crumbs() {
    var c = FT.clear(document.getElementById("flame-crumbs")), path = [];
    for (var a = zoom; a >= 0; a = parent[a]) path.unshift(a);
    path.forEach(function (j, k) {
      if (k) c.appendChild(FT.el("span", { class: "sep" }, "\u203a"));
      if (j === zoom) c.appendChild(FT.el("span", { class: "here", "data-frame": j }, names[j]));
      else {
        var link = FT.el("a", { "data-frame": j, title: "zoom out to here" }, names[j]);
        link.addEventListener("click", function () { zoomTo(j); });
        c.appendChild(link);
      }
    });
    if (zoom && D.func[zoom] >= 0) {
      c.appendChild(FT.el("span", { class: "sep" }, " "));
      var b = FT.el("button", { type: "button", class: "small" }, "details");
      b.addEventListener("click", function () { FT.functions.open(D.func[zoom]); });
      c.appendChild(b);
    }
    canvas.setAttribute("data-zoom", zoom);
  }

  /* ---- search ---- */
  function search(q) {
    var m = FT.matcher(q), f = {}, j;
    stats = { frames: 0, functions: 0, percent: 0 };
    if (!m) matched = null;
    else {
      matched = new Uint8Array(N);
      for (j = 1; j < N; j++) if (kind[j] === 1 && m(names[j])) { matched[j] = 1; stats.frames++; f[D.func[j]] = 1; }
      stats.functions = Object.keys(f).length;
    }
    updateCount();
    draw();
    return stats;
  }
  function updateCount() {
    var el = document.getElementById("flame-search-count");
    if (!matched) {
      el.textContent = "";
      el.className = "none";
      el.removeAttribute("data-frames");
      return;
    }
    var W = layout(FT.mode).W, sum = 0;
    for (var j = 0; j < N;) { if (matched[j]) { sum += W[j]; j = end[j]; } else j++; }
    stats.percent = W[0] > 0 ? 100 * sum / W[0] : 0;
    el.className = stats.frames ? "" : "none";
    el.textContent = stats.frames ? FT.count(stats.frames) + " frame" + (stats.frames === 1 ? "" : "s") + " (" +
      FT.count(stats.functions) + " function" + (stats.functions === 1 ? "" : "s") + ") match, " +
      FT.pct(stats.percent) + " of " + FT.modeLabel() + " time" : "no frame matches";
    el.setAttribute("data-frames", stats.frames);
    el.setAttribute("data-percent", stats.percent.toFixed(4));
  }

  /* ---- tooltip ---- */
  function tip(ev, j) {
    var L = layout(FT.mode), both = FT.calibrated;
    FT.showTip(ev, function (t) {
      t.appendChild(FT.el("b", null, names[j]));
      var note = "";
      if (kind[j] === 2) note = FT.count(nsmall[j]) + " call paths, each under " + FT.time(D.threshold_ns) + ", merged here";
      else if (kind[j] === 3) note = "time the task was switched out (sched_switch) inside " + names[parent[j]];
      else if (kind[j] === 4) note = "interrupt context: the root calls it holds ran in an interrupt, not in a task";
      else if (kind[j] === 1 && (D.flags[j] & 1)) note = "[irq] interrupt context" + ((D.flags[j] & 2) ? " (an interrupt starts here)" : "");
      else if (kind[j] === 1 && (D.flags[j] & PARTIAL)) note = "(partial): callers unknown (trace began mid-call or entries lost)";
      if (kind[j] === 1 && D.wc && D.wc[j] === 0 && D.w[j] > 0)
        note = (note ? note + "; " : "") + "not drawn in corrected mode: the correction takes this time out of the calls above (docs/html.md)";
      else if (kind[j] === 3 && D.wc && D.wc[j] === 0)
        note += "; not drawn in corrected mode: off-CPU time is taken out";
      if (note) t.appendChild(FT.el("div", { class: "hint" }, note));
      var rows = [];
      if (both) rows.push(["", "raw", "corrected"]);
      function row(label, raw, corr, fmt) { rows.push(both ? [label, fmt(raw), fmt(corr)] : [label, fmt(raw)]); }
      if (kind[j] !== 3 && kind[j] !== 4) row("calls", D.calls[j], D.callsc ? D.callsc[j] : D.calls[j], FT.count);
      row("inclusive", D.incl[j], D.inclc ? D.inclc[j] : D.incl[j], FT.time);
      if (kind[j] === 1) row("self", D.excl[j], D.exclc ? D.exclc[j] : D.excl[j], FT.time);
      if (kind[j] === 1 && D.calls[j]) {
        /* corrected percentiles as computed beside the Profile (JSON incl_corr_ns) */
        var mark = both && approx[j] ? "\u2248" : "";
        rows.push(both ? ["p50", FT.time(D.p50[j]), D.corr ? mark + FT.time(D.corr.p50[j]) : "\u2013"] : ["p50", FT.time(D.p50[j])]);
        rows.push(both ? ["p99", FT.time(D.p99[j]), D.corr ? mark + FT.time(D.corr.p99[j]) : "\u2013"] : ["p99", FT.time(D.p99[j])]);
      }
      t.appendChild(FT.tipTable(rows));
      if (both && approx[j] && kind[j] === 1) t.appendChild(FT.el("div", { class: "hint" }, "\u2248 estimate: " + FT.APPROX_NOTE));
      var W = L.W;
      if (op >= 0 && OPS[op].anc.some(function (a) { return a[0] === j; }))
        t.appendChild(FT.el("div", { class: "hint" }, "drawn as wide as the " + OPS[op].op + " paths under it; the figures above are the whole path's"));
      t.appendChild(FT.el("div", { class: "hint" }, FT.pct(100 * W[j] / (W[0] || 1)) + " of all " + FT.modeLabel() + " time" +
        (zoom ? ", " + FT.pct(100 * W[j] / (W[zoom] || 1)) + " of " + names[zoom] : "")));
      t.appendChild(FT.el("div", { class: "hint" }, kind[j] === 1 ? "click: zoom \u00b7 shift-click: function details" : "click: zoom"));
    });
  }

  canvas.addEventListener("mousemove", function (ev) {
    var r = canvas.getBoundingClientRect(), j = frameAt(ev.clientX - r.left, ev.clientY - r.top);
    if (j < 0) FT.hideTip(); else tip(ev, j);
  });
  canvas.addEventListener("mouseleave", FT.hideTip);
  canvas.addEventListener("click", function (ev) {
    var r = canvas.getBoundingClientRect(), j = frameAt(ev.clientX - r.left, ev.clientY - r.top);
    if (j < 0) return;
    if (ev.shiftKey && kind[j] === 1) FT.functions.open(D.func[j]);
    else zoomTo(j);
  });
  document.getElementById("flame-reset").addEventListener("click", function () { zoomTo(0); });
  function setOrient(o) {
    orient = o;
    box.scrollTop = o === "flame" ? box.scrollHeight : 0;  /* the root in view */
    lastFit = null;
    document.getElementById("orient-flame").classList.toggle("on", o === "flame");
    document.getElementById("orient-icicle").classList.toggle("on", o === "icicle");
    draw();
  }
  document.getElementById("orient-flame").addEventListener("click", function () { setOrient("flame"); });
  document.getElementById("orient-icicle").addEventListener("click", function () { setOrient("icicle"); });
  var sbox = document.getElementById("flame-search"), timer = 0;
  sbox.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(function () { search(sbox.value); }, 120); });
  sbox.addEventListener("keydown", function (ev) { if (ev.key === "Enter") { clearTimeout(timer); search(sbox.value); } });
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "Escape" && document.activeElement !== sbox && !document.getElementById("detail").classList.contains("open")) zoomTo(0);
  });
  FT.onMode(function () { updateCount(); opNote(); draw(); });

  /* ---- one operation ---- */
  var opSel = document.getElementById("flame-op"), opNoteEl = document.getElementById("flame-op-note");
  function opNote() {
    FT.clear(opNoteEl);
    if (op < 0) { opNoteEl.removeAttribute("data-op"); return; }
    var o = OPS[op], c = FT.mode === "corr" && FT.calibrated, total = c ? o.inclc : o.incl;
    opNoteEl.setAttribute("data-op", o.op);
    opNoteEl.setAttribute("data-total", String(total));
    opNoteEl.appendChild(document.createTextNode(o.op + ": " + FT.time(total) + " " + FT.modeLabel() + " in the paths of " +
      (o.shared ? "its op functions under nfsd4_proc_compound (shared: they hold every COMPOUND that ran that op)" : "the procedure that named it") +
      (o.undrawn ? "; " + FT.count(o.undrawn) + " of them merged into small frames, not drawn" : "") + ". "));
    opNoteEl.appendChild(FT.el("b", null, "The dispatcher’s own work around the procedure (decode, reply) is not attributable to one operation in the aggregate: it is not drawn."));
  }
  function setOp(name) {
    op = -1;
    for (var k = 0; k < OPS.length; k++) if (OPS[k].op === name) op = k;
    if (opSel) opSel.value = op >= 0 ? String(op) : "";
    opNote();
    zoom = 0;
    crumbs();
    updateCount();
    draw();
    return op;
  }
  if (OPS.length && opSel) {
    opSel.appendChild(FT.el("option", { value: "" }, "all operations"));
    OPS.forEach(function (o, k) { opSel.appendChild(FT.el("option", { value: String(k) }, o.op)); });
    opSel.addEventListener("change", function () { setOp(opSel.value === "" ? null : OPS[+opSel.value].op); });
    document.getElementById("flame-op-box").hidden = false;
  }
  var rt = 0;
  window.addEventListener("resize", function () { clearTimeout(rt); rt = setTimeout(draw, 100); });

  /* note and legend */
  var note = document.getElementById("flame-note");
  if (D.paths_shown < D.paths_total)
    note.textContent = FT.count(D.paths_shown) + " of " + FT.count(D.paths_total) + " call paths drawn as frames; paths under " +
      FT.time(D.threshold_ns) + " (" + FT.pct(100 * D.threshold_ns / (D.incl[0] || 1)) + " of the graph) are merged per parent into [N small frames]. The function table has every function.";
  var leg = document.getElementById("flame-legend");
  [["task context", FT.color("vfs_write", "task")], ["[irq] interrupt context", FT.color("irq_exit_rcu", "irq")],
   ["[off-CPU] switched out", "#8d99a6"], ["[N small frames] merged", FT.color("", "small")],
   ["(partial) callers unknown", FT.color("x", "partial")], ["search match", FT.MATCH]].forEach(function (l) {
    var s = FT.el("span"), sw = FT.el("i");
    sw.style.background = l[1];
    if (l[0].indexOf("off-CPU") >= 0) sw.style.background = "repeating-linear-gradient(135deg,#aeb7c1 0 3px,#6b7682 3px 4px)";
    s.appendChild(sw);
    s.appendChild(document.createTextNode(l[0]));
    leg.appendChild(s);
  });

  return {
    N: N, names: names, kind: kind, parent: parent, draw: draw, zoomTo: zoomTo, search: search,
    zoomed: function () { return zoom; }, frameAt: frameAt, rectOf: rectOf, layout: layout,
    stats: function () { return stats; }, canvas: canvas, setOp: setOp, op: function () { return op >= 0 ? OPS[op].op : null; },
    find: function (name) { for (var j = 0; j < N; j++) if (names[j] === name) return j; return -1; },
    init: function () { crumbs(); draw(); }
  };
})();
