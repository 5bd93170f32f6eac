/* ftflame report: shared state, formatting, colours. Written for this page;
 * no library, no network. Everything hangs off one object, window.ftflame. */
var FT = (window.ftflame = {});

/* the data as report/html.py's page_data ships it: undo its packing first */
FT.unpack = function (d) {
  var fl = d.flame;
  function undup(key) {
    var v = fl[key];
    if (!v || !v.base) return;
    var a = fl[v.base].slice();
    v.zero.forEach(function (r) { for (var k = 0; k < r[1]; k++) a[r[0] + k] = 0; });
    v.except.forEach(function (e) { a[e[0]] = e[1]; });
    fl[key] = a;
  }
  undup("w");
  undup("wc");
  if (fl.corr && fl.corr.approx.runs) {
    var list = [];
    fl.corr.approx.runs.forEach(function (r) { for (var k = 0; k < r[1]; k++) list.push(r[0] + k); });
    fl.corr.approx = list;
  }
  (d.slowest || []).forEach(function (c) {
    var T = c.tree, n, i, k, irq, off;
    if (!T || !T.up) return;
    n = T.up.length;
    T.parent = new Array(n); T.t = new Array(n); irq = new Array(n).fill(0); off = T.offcpu ? new Array(n).fill(0) : null;
    for (i = 0; i < n; i++) {
      T.parent[i] = i - T.up[i];
      T.t[i] = T.dt[i] + (T.parent[i] >= 0 ? T.t[T.parent[i]] : 0);
    }
    T.irq.forEach(function (r) { for (k = 0; k < r[1]; k++) irq[r[0] + k] = 1; });
    if (off) T.offcpu.forEach(function (e) { off[e[0]] = e[1]; });
    T.irq = irq; T.offcpu = off;
    delete T.up; delete T.dt;
  });
  return d;
};
FT.data = FT.unpack(JSON.parse(document.getElementById("ftflame-data").textContent));
FT.calibrated = !!FT.data.header.calibration.applied;
/* what every interval in a tooltip holds, the model's own words (uncertainty.made_of) */
FT.PM_NOTE = FT.data.header.calibration.intervals_made_of || "95%";
FT.pm = function (ns) { return "\u00b1 " + FT.time(ns) + " (" + FT.PM_NOTE + ")"; };
FT.mode = FT.calibrated ? "corr" : "raw"; /* "raw" | "corr" */
FT.listeners = [];
FT.onMode = function (fn) { FT.listeners.push(fn); };
FT.setMode = function (mode) {
  if (mode === "corr" && !FT.calibrated) return;
  FT.mode = mode;
  document.getElementById("mode-raw").classList.toggle("on", mode === "raw");
  document.getElementById("mode-corr").classList.toggle("on", mode === "corr");
  var badge = document.getElementById("mode-badge");
  badge.textContent = mode === "corr" ? "CORRECTED" : "RAW";
  badge.className = "badge " + (mode === "corr" ? "corr" : "raw");
  for (var i = 0; i < FT.listeners.length; i++) FT.listeners[i](mode);
};
/* how an estimated corrected figure was made: the same words as the JSON's
 * "approx" (docs/overhead.md, docs/html.md) */
FT.APPROX_NOTE = "corrected min, max and percentiles are estimated by scaling the raw ones by corrected mean / raw mean (exact only where every call's corrected time is known: root calls)";
FT.modeLabel = function () { return FT.mode === "corr" ? "corrected" : "raw"; };

/* ---- numbers ---- */
var NF = {};
function nf(decimals) {
  if (!NF[decimals]) NF[decimals] = new Intl.NumberFormat("en-US", { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
  return NF[decimals];
}
/* nanoseconds as microseconds, the unit function_graph prints */
FT.us = function (ns) {
  if (ns === null || ns === undefined || isNaN(ns)) return "\u2013";
  if (ns === 0) return "0";
  var v = ns / 1000, a = Math.abs(v);
  return nf(a < 10 ? 3 : a < 1000 ? 2 : a < 100000 ? 1 : 0).format(v);
};
/* nanoseconds with a unit chosen for the size */
FT.time = function (ns) {
  if (ns === null || ns === undefined || isNaN(ns)) return "\u2013";
  var a = Math.abs(ns);
  if (a < 1000) return nf(0).format(ns) + " ns";
  if (a < 1e6) return nf(a < 1e4 ? 3 : a < 1e5 ? 2 : 1).format(ns / 1e3) + " \u00b5s";
  if (a < 1e9) return nf(a < 1e7 ? 3 : a < 1e8 ? 2 : 1).format(ns / 1e6) + " ms";
  return nf(3).format(ns / 1e9) + " s";
};
/* short axis label: at most 3 significant digits, no trailing zeros */
FT.short = function (ns) {
  var a = Math.abs(ns), u = a < 1e3 ? [1, "ns"] : a < 1e6 ? [1e3, "\u00b5s"] : a < 1e9 ? [1e6, "ms"] : [1e9, "s"];
  return String(+(ns / u[0]).toPrecision(3)) + " " + u[1];
};
/* log-axis ticks between lo and hi: decades, or 1-2-5 steps over a short span */
FT.logTicks = function (lo, hi) {
  var out = [], steps = Math.log10(hi / lo) < 2.2 ? [1, 2, 5] : [1];
  for (var e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++)
    steps.forEach(function (m) { var v = m * Math.pow(10, e); if (v >= lo && v <= hi) out.push(v); });
  return out;
};
FT.count = function (n) { return nf(0).format(n); };
FT.pct = function (x) { return (isFinite(x) ? nf(x < 10 ? 2 : 1).format(x) : "\u2013") + "%"; };

/* ---- colours: deterministic, by name hash ---- */
FT.hash = function (s) {
  var h = 2166136261;
  for (var i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619); }
  return h >>> 0;
};
var COLOR_CACHE = {};
/* kind: "task" (warm), "irq" (blue/violet), "offcpu", "small", "partial" */
FT.color = function (name, kind) {
  var key = kind + "\u0000" + name, c = COLOR_CACHE[key];
  if (c) return c;
  var h = FT.hash(name), r1 = (h & 0xff) / 255, r2 = ((h >>> 8) & 0xff) / 255, r3 = ((h >>> 16) & 0xff) / 255;
  if (kind === "irq") c = "hsl(" + (205 + 50 * r1).toFixed(0) + "," + (45 + 25 * r2).toFixed(0) + "%," + (62 + 10 * r3).toFixed(0) + "%)";
  else if (kind === "offcpu") c = "#8d99a6";
  else if (kind === "small") c = "#d6dadf";
  else if (kind === "partial") c = "hsl(" + (20 + 30 * r1).toFixed(0) + "," + (12 + 18 * r2).toFixed(0) + "%," + (60 + 14 * r3).toFixed(0) + "%)";
  else c = "hsl(" + (4 + 50 * r1).toFixed(0) + "," + (70 + 25 * r2).toFixed(0) + "%," + (52 + 12 * r3).toFixed(0) + "%)";
  COLOR_CACHE[key] = c;
  return c;
};
FT.MATCH = "#e040fb";

/* ---- DOM helpers ---- */
FT.el = function (tag, attrs, text) {
  var e = document.createElement(tag);
  if (attrs) for (var k in attrs) {
    if (k === "class") e.className = attrs[k];
    else if (k === "title") e.title = attrs[k];
    else e.setAttribute(k, attrs[k]);
  }
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
};
FT.clear = function (e) { while (e.firstChild) e.removeChild(e.firstChild); return e; };

/* ---- tooltip ---- */
FT.tip = document.getElementById("tip");
FT.showTip = function (ev, build) {
  var t = FT.tip;
  FT.clear(t);
  build(t);
  t.style.display = "block";
  var w = t.offsetWidth, h = t.offsetHeight, x = ev.clientX + 14, y = ev.clientY + 16;
  if (x + w > window.innerWidth - 6) x = Math.max(6, ev.clientX - w - 14);
  if (y + h > window.innerHeight - 6) y = Math.max(6, ev.clientY - h - 12);
  t.style.left = x + "px";
  t.style.top = y + "px";
};
FT.hideTip = function () { FT.tip.style.display = "none"; };
/* rows of [label, value, value?] into a small table */
FT.tipTable = function (rows) {
  var tb = FT.el("table");
  rows.forEach(function (r) {
    var tr = FT.el("tr");
    tr.appendChild(FT.el("td", null, r[0]));
    for (var i = 1; i < r.length; i++) tr.appendChild(FT.el("td", { class: "n" }, r[i]));
    tb.appendChild(tr);
  });
  return tb;
};

/* canvas sized for the device pixel ratio; returns the 2d context in CSS px */
FT.fitCanvas = function (canvas, cssHeight) {
  var dpr = window.devicePixelRatio || 1, w = canvas.parentNode.clientWidth || 800;
  canvas.style.height = cssHeight + "px";
  canvas.width = Math.round(w * dpr);
  canvas.height = Math.round(cssHeight * dpr);
  var ctx = canvas.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  return { ctx: ctx, w: w, h: cssHeight };
};

/* a matcher from the search box: /regex/ or case-insensitive text */
FT.matcher = function (q) {
  q = (q || "").trim();
  if (!q) return null;
  if (q.length > 2 && q[0] === "/" && q[q.length - 1] === "/") {
    try { var re = new RegExp(q.slice(1, -1)); return function (s) { return re.test(s); }; }
    catch (e) { return function () { return false; }; }
  }
  var low = q.toLowerCase();
  return function (s) { return s.toLowerCase().indexOf(low) >= 0; };
};
FT.escapeRegex = function (s) { return s.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/[{}]/g, "\\$&"); };
