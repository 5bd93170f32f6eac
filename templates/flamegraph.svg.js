/* ftflame standalone flame graph: zoom on click, reset, search. */
(function () {
  "use strict";
  var svg = document.documentElement, W = +svg.getAttribute("data-width"), CH = 7;
  var frames = Array.prototype.slice.call(document.querySelectorAll("g.f"));
  var byId = {};
  frames.forEach(function (g) {
    g._x = +g.getAttribute("data-x"); g._w = +g.getAttribute("data-w"); g._d = +g.getAttribute("data-depth");
    g._p = g.getAttribute("data-parent"); g._name = g.querySelector("title").textContent.split(" | ")[0];
    byId[g.id] = g;
  });
  var root = byId.f0, matchedTerm = null;

  function label(g, pw) {
    var t = g.querySelector("text"), n = Math.floor((pw - 6) / CH), s = g._name;
    t.textContent = n < 3 ? "" : (s.length <= n ? s : s.slice(0, n - 2) + "..");
  }
  function place(g, px, pw) {
    var r = g.querySelector("rect");
    r.setAttribute("x", px.toFixed(2));
    r.setAttribute("width", Math.max(pw, 0).toFixed(2));
    g.querySelector("text").setAttribute("x", (px + 3).toFixed(2));
    label(g, pw);
  }
  function isAncestor(a, g) {
    for (var p = g; p; p = byId["f" + p._p]) if (p === a) return true;
    return false;
  }
  function zoom(z) {
    var scale = W / z._w;
    frames.forEach(function (g) {
      g.classList.remove("hide", "dim");
      if (isAncestor(g, z) && g !== z) { g.classList.add("dim"); place(g, 0, W); return; }
      if (!isAncestor(z, g)) { g.classList.add("hide"); return; }
      var pw = g._w * scale;
      if (pw < 0.3) { g.classList.add("hide"); return; }
      place(g, (g._x - z._x) * scale, pw);
    });
    svg.setAttribute("data-zoom", z.id);
  }
  function search(term) {
    matchedTerm = term || null;
    var low = (term || "").toLowerCase(), n = 0, sum = 0;
    frames.forEach(function (g) {
      var r = g.querySelector("rect"), hit = !!low && g !== root && g._name.toLowerCase().indexOf(low) >= 0;
      r.setAttribute("fill", hit ? "#e040fb" : r.getAttribute("data-fill"));
      g._hit = hit;
      if (hit) n++;
    });
    frames.forEach(function (g) {
      if (!g._hit) return;
      for (var p = byId["f" + g._p]; p; p = byId["f" + p._p]) if (p._hit) return;
      sum += g._w;
    });
    svg.setAttribute("data-matches", n);
    document.getElementById("matched").textContent = low ? n + " frames match, " + (100 * sum / root._w).toFixed(2) + "% of time" : "";
    return n;
  }
  window.ftflameSearch = search;
  frames.forEach(function (g) { g.addEventListener("click", function () { zoom(g); }); });
  document.getElementById("reset").addEventListener("click", function () { zoom(root); });
  document.getElementById("search").addEventListener("click", function () {
    var t = window.prompt("Search frames (case-insensitive text):", matchedTerm || "");
    if (t !== null) search(t);
  });
  svg.setAttribute("data-zoom", "f0");
  svg.setAttribute("data-ready", "1");
})();
