/* Balance sheet, the raw/corrected switch, start-up. */
FT.balance = (function () {
  var B = FT.data.balance, body = document.getElementById("balance-body");
  function label(k) {
    var l = k.replace(/_ns$/, "").replace(/_pct$/, " %").replace(/_/g, " ");
    return /_ns$/.test(k) ? l + " (\u00b5s)" : l;
  }
  function cell(k, v) {
    if (v === null || v === undefined) return "";
    if (typeof v === "number") {
      if (/_ns$/.test(k)) return FT.us(v);
      if (/pct|percent/.test(k)) return FT.pct(v);
      return Number.isInteger(v) ? FT.count(v) : String(Math.round(v * 1000) / 1000);
    }
    if (typeof v === "object") return JSON.stringify(v);
    return String(v);
  }
  function render() {
    FT.clear(body);
    if (!B || !B.length) {
      body.appendChild(FT.el("p", { class: "note", id: "balance-none" },
        "No balance sheet in this report. It needs a measured total per root function: the trace itself with a calibration, " +
        "a root-only baseline recording (collect.sh --baseline) or numbers you give; then each row checks that measured = " +
        "corrected components + removed overhead + irq + off-CPU + unaccounted."));
      return;
    }
    /* rows are objects (column name: value); lists get numbered columns */
    B = B.map(function (row) {
      if (!Array.isArray(row)) return row;
      var o = {};
      row.forEach(function (v, k) { o["column " + (k + 1)] = v; });
      return o;
    });
    var keys = [];
    B.forEach(function (row) {
      if (row && typeof row === "object" && !Array.isArray(row)) Object.keys(row).forEach(function (k) { if (keys.indexOf(k) < 0) keys.push(k); });
    });
    var t = FT.el("table", { class: "data", id: "balance-table" }), tr = FT.el("tr"), th = FT.el("thead"), tb = FT.el("tbody");
    keys.forEach(function (k, j) { tr.appendChild(FT.el("th", { class: j === 0 ? "name" : "" }, label(k))); });
    th.appendChild(tr);
    t.appendChild(th);
    B.forEach(function (row) {
      var r = FT.el("tr");
      keys.forEach(function (k, j) {
        var v = row ? row[k] : undefined;
        r.appendChild(FT.el("td", { class: j === 0 || typeof v === "string" ? "name" : "" }, cell(k, v)));
      });
      tb.appendChild(r);
    });
    t.appendChild(tb);
    body.appendChild(t);
    body.appendChild(FT.el("p", { class: "note" }, "measured = corrected components + removed overhead + irq + off-CPU + unaccounted; accounted % = how much of the measured total the components explain."));
  }
  return { render: render, init: render };
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
