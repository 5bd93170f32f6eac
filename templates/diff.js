/* ftflame diff page: differential flame graph, delta table, latency overlay.
 * Written for this page; no library, no network. Prints the figures of the
 * diff model (ftflame/diff/model.py); colours follow its verdicts. */
var FTD = (window.ftdiff = {});
FTD.data = JSON.parse(document.getElementById("ftflame-diff-data").textContent);
var V = { SAME: 0, SLOWER: 1, FASTER: 2, NEW: 3, GONE: 4 };
var VNAME = FTD.data.verdicts;

function nfmt(d) { return new Intl.NumberFormat("en-US", { minimumFractionDigits: d, maximumFractionDigits: d }); }
var NF1 = nfmt(1), NF0 = nfmt(0), NF2 = nfmt(2);
FTD.us = function (ns) { return ns === null || ns === undefined ? "\u2013" : NF1.format(ns / 1000); };
FTD.pct = function (x) { return x === null || x === undefined ? "\u2013" : (x >= 0 ? "+" : "") + NF1.format(100 * x) + "%"; };
FTD.ci = function (lo, hi) { return lo === null || hi === null ? "\u2013" : "[" + FTD.pct(lo) + ", " + FTD.pct(hi) + "]"; };

/* the verdict's colour: red slower, blue faster, near-white within noise;
 * stronger with a larger change (saturated at +-100%) */
FTD.color = function (verdict, change) {
  var s = Math.min(1, Math.abs(change || 0)), k = 0.35 + 0.65 * s;
  if (verdict === V.SLOWER) return "rgb(" + 255 + "," + Math.round(235 - 190 * k) + "," + Math.round(225 - 200 * k) + ")";
  if (verdict === V.FASTER) return "rgb(" + Math.round(225 - 190 * k) + "," + Math.round(235 - 130 * k) + "," + 255 + ")";
  if (verdict === V.NEW) return "#f3e9c6";
  return "#f7f7f7";
};

/* ---- differential flame graph ---- */
FTD.flame = (function () {
  var F = FTD.data.flame, N = F.name.length, ROW = 17, PAD = 2;
  var kids = [], depth = new Int32Array(N), maxDepth = 0, i;
  for (i = 0; i <= N; i++) kids.push([]);
  for (i = 0; i < N; i++) {
    var p = F.parent[i];
    depth[i] = p < 0 ? 1 : depth[p] + 1;
    if (depth[i] > maxDepth) maxDepth = depth[i];
    kids[p < 0 ? N : p].push(i);
  }
  /* frame N is "all": the AFTER roots side by side */
  var W = new Float64Array(N + 1), X = new Float64Array(N + 1);
  for (i = 0; i < N; i++) W[i] = F.w[i] || 0;
  kids[N].forEach(function (j) { W[N] += W[j]; });
  (function place(j) {
    var x = X[j], ks = kids[j].slice().sort(function (a, b) { return W[b] - W[a] || a - b; });
    ks.forEach(function (k) { X[k] = x; x += W[k]; place(k); });
  })(N);
  var canvas = document.getElementById("flame-canvas"), box = document.getElementById("flame-box");
  var zoom = N, matched = null, hatch = null, tip = document.getElementById("tip");
  function rowY(d) { return PAD + (maxDepth - d) * ROW; }
  function view() { return { x0: X[zoom], w: W[zoom] || 1 }; }
  function rect(j) {
    var v = view(), cw = canvas.clientWidth || box.clientWidth;
    var d = j === N ? 0 : depth[j];
    return { x: (X[j] - v.x0) / v.w * cw, y: rowY(d), w: W[j] / v.w * cw, h: ROW - 1 };
  }
  function visible(j) {
    if (j === N || zoom === N) return true;
    for (var a = j; a >= 0; a = F.parent[a]) if (a === zoom) return true;
    for (a = zoom; a >= 0; a = F.parent[a]) if (a === j) return true;
    return false;
  }
  function hatchPattern(ctx) {
    if (hatch) return hatch;
    var c = document.createElement("canvas"); c.width = c.height = 6;
    var g = c.getContext("2d");
    g.fillStyle = "#f3e9c6"; g.fillRect(0, 0, 6, 6);
    g.strokeStyle = "#b9a66a"; g.lineWidth = 1.5; g.beginPath(); g.moveTo(0, 6); g.lineTo(6, 0); g.stroke();
    hatch = ctx.createPattern(c, "repeat");
    return hatch;
  }
  function draw() {
    var cw = box.clientWidth, dpr = window.devicePixelRatio || 1, H = (maxDepth + 1) * ROW + 2 * PAD;
    canvas.style.width = cw + "px"; canvas.style.height = H + "px";
    canvas.width = Math.round(cw * dpr); canvas.height = Math.round(H * dpr);
    var ctx = canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, cw, H);
    ctx.font = "11.5px system-ui, sans-serif"; ctx.textBaseline = "middle";
    for (var j = 0; j <= N; j++) {
      if (!visible(j)) continue;
      var r = rect(j);
      if (r.w < 0.35 || r.x > cw || r.x + r.w < 0) continue;
      ctx.fillStyle = j === N ? "#e8eaed" : F.verdict[j] === V.NEW ? hatchPattern(ctx) : FTD.color(F.verdict[j], F.change[j]);
      ctx.fillRect(r.x, r.y, Math.max(r.w - 0.5, 0.35), r.h);
      if (matched && matched[j]) { ctx.strokeStyle = "#e040fb"; ctx.lineWidth = 2; ctx.strokeRect(r.x + 1, r.y + 1, r.w - 2, r.h - 2); }
      if (r.w > 30) {
        ctx.fillStyle = "#1d232b";
        var label = j === N ? "all" : F.name[j], room = Math.floor((r.w - 6) / 6.2);
        ctx.save(); ctx.beginPath(); ctx.rect(r.x, r.y, r.w - 2, r.h); ctx.clip();  /* never over the next frame */
        ctx.fillText(label.length > room ? label.slice(0, Math.max(room - 1, 0)) + "\u2026" : label, Math.max(r.x, 0) + 3, r.y + ROW / 2);
        ctx.restore();
      }
    }
    crumbs();
  }
  function crumbs() {
    var el = document.getElementById("flame-crumbs"), chain = [];
    for (var a = zoom; a >= 0 && a !== N; a = F.parent[a]) chain.unshift(a);
    el.textContent = "";
    [N].concat(chain).forEach(function (j, k) {
      if (k) { var s = document.createElement("span"); s.className = "sep"; s.textContent = ">"; el.appendChild(s); }
      var link = document.createElement("a");
      link.textContent = j === N ? "all" : F.name[j];
      if (j === zoom) link.className = "here";
      link.addEventListener("click", function () { FTD.flame.zoom(j); });
      el.appendChild(link);
    });
  }
  function at(ev) {
    var b = canvas.getBoundingClientRect(), x = ev.clientX - b.left, y = ev.clientY - b.top;
    for (var j = 0; j <= N; j++) {
      if (!visible(j)) continue;
      var r = rect(j);
      if (x >= r.x && x < r.x + r.w && y >= r.y && y < r.y + r.h) return j;
    }
    return -1;
  }
  function describe(j) {
    if (j === N) return "all: " + FTD.us(W[N]) + " \u00b5s per root call (AFTER)";
    return F.path[j].split(";").join(" \u2192 ") + "\n" + VNAME[F.verdict[j]] +
      (F.verdict[j] === V.NEW ? " (BEFORE has no such frame)" : F.verdict[j] === V.SAME ? "" :
        ": " + FTD.pct(F.change[j]) + " " + FTD.ci(F.lo[j], F.hi[j]) +
        ", adjusted p " + (F.q[j] === "-" ? "\u2013" : F.q[j])) +
      "\nmedian per call: " + FTD.us(F.mb[j]) + " \u2192 " + FTD.us(F.ma[j]) + " \u00b5s" +
      "\nper root call: " + FTD.us(F.wb[j]) + " \u2192 " + FTD.us(F.w[j]) + " \u00b5s";
  }
  canvas.addEventListener("click", function (ev) { var j = at(ev); if (j >= 0) FTD.flame.zoom(j); });
  canvas.addEventListener("mousemove", function (ev) {
    var j = at(ev);
    if (j < 0) { tip.style.display = "none"; return; }
    tip.textContent = describe(j); tip.style.whiteSpace = "pre"; tip.style.display = "block";
    tip.style.left = (ev.pageX + 12) + "px"; tip.style.top = (ev.pageY + 12) + "px";
  });
  canvas.addEventListener("mouseleave", function () { tip.style.display = "none"; });
  document.getElementById("flame-reset").addEventListener("click", function () { FTD.flame.zoom(N); });
  function search(q) {
    var count = document.getElementById("flame-search-count");
    if (!q) { matched = null; count.textContent = ""; draw(); return 0; }
    var re = null;
    if (q.length > 2 && q[0] === "/" && q[q.length - 1] === "/") { try { re = new RegExp(q.slice(1, -1)); } catch (e) { re = null; } }
    matched = {};
    var n = 0, share = 0, j;
    for (j = 0; j < N; j++) if (re ? re.test(F.name[j]) : F.name[j].indexOf(q) >= 0) { matched[j] = 1; n++; }
    for (j = 0; j < N; j++) {  /* time matched: matched frames without a matched ancestor */
      if (!matched[j]) continue;
      var a = F.parent[j], top = true;
      for (; a >= 0; a = F.parent[a]) if (matched[a]) { top = false; break; }
      if (top) share += W[j];
    }
    count.textContent = n + " frame" + (n === 1 ? "" : "s") + ", " + NF1.format(100 * share / (W[N] || 1)) + "% of time matched";
    count.className = n ? "" : "none";
    draw();
    return n;
  }
  document.getElementById("flame-search").addEventListener("input", function (ev) { search(ev.target.value); });
  window.addEventListener("resize", draw);
  document.getElementById("flame-note").textContent = (F.left_out ?
    F.left_out + " narrow call paths not drawn (under 0.01% of the graph). " : "") + (F.irq_left_out ?
    F.irq_left_out + " interrupt subtrees not drawn: their time is out of the interrupted calls' corrected time (the table lists their functions)." : "");
  draw();
  return {
    zoom: function (j) { zoom = j; draw(); }, zoomed: function () { return zoom === N ? -1 : zoom; },
    search: search, rect: rect, frames: N, all: N,
  };
})();

/* ---- sortable delta table (functions and operations), paged ---- */
FTD.table = (function () {
  var T = FTD.data.table, n = T.name.length, PAGE = 50;
  /* a verdict's change, interval and p are shown only where there is a
   * verdict: a "no change" row's percent (a tiny time per call can move
   * by x600) or p-value would read as a finding */
  function judged(i) { return T.verdict[i] === V.SLOWER || T.verdict[i] === V.FASTER; }
  function both(a, b, f) { return f(a) + " \u2192 " + f(b); }
  var hasOps = T.kind.indexOf("operation") >= 0;
  var cols = [
    [hasOps ? "function / operation" : "function", function (i) { return T.name[i]; }, function (i) { return T.name[i]; }, "name"],
    ["verdict", function (i) { return VNAME[T.verdict[i]]; }, function (i) { return T.verdict[i]; }, "verdict"],
    ["change [95% interval]", function (i) { return judged(i) ? FTD.pct(T.change[i]) + " " + FTD.ci(T.lo[i], T.hi[i]) : "\u2013"; },
      function (i) { return judged(i) ? T.change[i] : null; }, "num"],
    ["adj. p", function (i) { return judged(i) && T.q[i] !== "-" ? T.q[i] : "\u2013"; }, function (i) { return judged(i) ? T.qn[i] : null; }, "num"],
    ["median \u00b5s (before \u2192 after)", function (i) { return both(T.mb[i], T.ma[i], FTD.us); }, function (i) { return T.ma[i]; }, "num"],
    ["mean \u00b5s (before \u2192 after)", function (i) { return both(T.meanb[i], T.meana[i], FTD.us) + (T.disagree[i] ? " \u26a0" : ""); },
      function (i) { return T.meana[i]; }, "num"],
    ["calls per root call", function (i) { return both(T.prb[i], T.pra[i], function (x) { return NF2.format(x); }); },
      function (i) { return T.pra[i]; }, "num"],
    ["\u0394 \u00b5s/root call", function (i) { return FTD.us(T.delta[i]); }, function (i) { return Math.abs(T.delta[i] || 0); }, "num"],
  ];
  // the kind column (function / operation) only when the dispatchers' operations are listed
  if (hasOps) cols.push(["kind", function (i) { return T.kind[i]; }, function (i) { return T.kind[i]; }, "kind"]);
  var DELTA = 7;
  var table = document.getElementById("fn-table"), sortCol = DELTA, desc = true, filter = "", shown = PAGE;
  var more = document.getElementById("fn-more"), all = document.getElementById("fn-all");
  function order() {
    var idx = [];
    for (var i = 0; i < n; i++) if (!filter || T.name[i].indexOf(filter) >= 0) idx.push(i);
    var key = cols[sortCol][2];
    idx.sort(function (a, b) {
      var x = key(a), y = key(b);
      if (x === null && y === null) return a - b;
      if (x === null) return 1; if (y === null) return -1;
      var c = x < y ? -1 : x > y ? 1 : 0;
      return (desc ? -c : c) || a - b;
    });
    return idx;
  }
  function render() {
    var head = table.tHead, body = table.tBodies[0];
    head.textContent = ""; body.textContent = "";
    var tr = head.insertRow();
    cols.forEach(function (c, k) {
      var th = document.createElement("th");
      th.textContent = c[0] + (k === sortCol ? (desc ? " \u25bc" : " \u25b2") : "");
      th.className = c[3] + " sortable";
      th.addEventListener("click", function () {
        if (sortCol === k) desc = !desc; else { sortCol = k; desc = c[3] === "num"; }
        render();
      });
      tr.appendChild(th);
    });
    var idx = order(), upto = Math.min(idx.length, shown);
    for (var r = 0; r < upto; r++) {
      var i = idx[r], row = body.insertRow();
      cols.forEach(function (c, k) {
        var td = row.insertCell();
        td.textContent = c[1](i);
        td.className = k === 1 ? "verdict v-" + VNAME[T.verdict[i]].replace(" ", "-") : c[3];
        if (k === 2 && T.drift && judged(i)) {  /* the change the verdict was judged on */
          var rel = document.createElement("span"); rel.className = "why"; rel.textContent = FTD.pct(T.vsd[i]) + " " + FTD.ci(T.vslo[i], T.vshi[i]) + " against the drift"; td.appendChild(rel);
        }
        if (k === 1 && T.why[i]) {  /* what held a p-value back: under the verdict */
          var why = document.createElement("span"); why.className = "why"; why.textContent = T.why[i]; td.appendChild(why);
        }
        if (k === 5 && T.disagree[i]) td.title = "mean and typical call moved in opposite directions: a few long calls came or went; the verdict is on the typical call";
      });
    }
    var what = hasOps ? " functions and operations" : " functions";
    document.getElementById("fn-count").textContent = (upto < idx.length ? "showing " + upto + " of " : "") +
      idx.length + (idx.length < n ? " of " + n : "") + what;
    more.hidden = all.hidden = upto >= idx.length;
    more.textContent = "show " + Math.min(PAGE, idx.length - upto) + " more";
    all.textContent = "show all " + idx.length;
  }
  document.getElementById("fn-filter").addEventListener("input", function (ev) { filter = ev.target.value; shown = PAGE; render(); });
  more.addEventListener("click", function () { shown += PAGE; render(); });
  all.addEventListener("click", function () { shown = Infinity; render(); });
  render();
  return { sortBy: function (k, d) { sortCol = k; desc = d; render(); }, order: order, page: PAGE,
           showAll: function () { shown = Infinity; render(); } };
})();

/* ---- latency over time, both sides overlaid ---- */
FTD.latency = (function () {
  var L = FTD.data.latency, sel = document.getElementById("lat-root"), canvas = document.getElementById("lat-canvas");
  var names = [];
  [L.before, L.after].forEach(function (s) { s.names.forEach(function (x) { if (names.indexOf(x) < 0) names.push(x); }); });
  names.forEach(function (x) { var o = document.createElement("option"); o.textContent = x; sel.appendChild(o); });
  function points(side, name) {
    var f = side.names.indexOf(name), out = [];
    for (var i = 0; i < side.d.length; i++) if (side.func[i] === f && side.d[i] > 0) out.push([side.t[i], side.d[i]]);
    return out;
  }
  function draw() {
    var name = sel.value, pb = points(L.before, name), pa = points(L.after, name), all = pb.concat(pa);
    var cw = canvas.parentNode.clientWidth || 800, H = 340, dpr = window.devicePixelRatio || 1;
    canvas.style.width = cw + "px"; canvas.width = Math.round(cw * dpr); canvas.height = Math.round(H * dpr);
    var ctx = canvas.getContext("2d"); ctx.setTransform(dpr, 0, 0, dpr, 0, 0); ctx.clearRect(0, 0, cw, H);
    var note = document.getElementById("lat-note");
    if (!all.length) { note.textContent = "no root calls to plot"; return; }
    var tmax = 0, lo = Infinity, hi = 0;
    all.forEach(function (p) { tmax = Math.max(tmax, p[0]); lo = Math.min(lo, p[1]); hi = Math.max(hi, p[1]); });
    var L0 = Math.log10(lo / 1.2), L1 = Math.log10(hi * 1.2), left = 60, bottom = H - 24;
    function px(t) { return left + (tmax ? t / tmax : 0) * (cw - left - 10); }
    function py(d) { return bottom - (Math.log10(d) - L0) / (L1 - L0 || 1) * (bottom - 8); }
    ctx.strokeStyle = "#d9dde3"; ctx.fillStyle = "#5b6573"; ctx.font = "11px system-ui, sans-serif";
    for (var e = Math.ceil(L0); e <= Math.floor(L1); e++) {
      var y = py(Math.pow(10, e)); ctx.beginPath(); ctx.moveTo(left, y); ctx.lineTo(cw - 10, y); ctx.stroke();
      ctx.fillText(NF0.format(Math.pow(10, e) / 1000) + " \u00b5s", 4, y + 3);
    }
    ctx.fillText("0 s", left, H - 8); ctx.fillText(NF2.format(tmax) + " s", cw - 60, H - 8);
    [[pb, "rgba(42,111,219,0.7)"], [pa, "rgba(224,48,30,0.7)"]].forEach(function (s) {
      ctx.fillStyle = s[1];
      s[0].forEach(function (p) { ctx.beginPath(); ctx.arc(px(p[0]), py(p[1]), 2.5, 0, 6.2832); ctx.fill(); });
    });
    note.textContent = pb.length + " BEFORE and " + pa.length + " AFTER root calls of " + name +
      (L.before.thinned || L.after.thinned ? " (thinned to the slowest " + FTD.data.latency.before.d.length + " per side)" : "");
  }
  sel.addEventListener("change", draw);
  window.addEventListener("resize", draw);
  draw();
  return { draw: draw };
})();
document.documentElement.setAttribute("data-ready", "1");
