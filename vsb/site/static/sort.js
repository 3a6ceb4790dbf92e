// Sortable tables: click a header of a table.sortable to sort by that column.
// Numeric columns (th[data-type=num]) sort by each cell's data-v; empty values sort last.
(function () {
  "use strict";
  function key(cell, numeric) {
    if (!cell) return numeric ? null : "";
    if (numeric) {
      var raw = cell.getAttribute("data-v");
      if (raw === null) raw = cell.textContent;
      var v = parseFloat(raw);
      return isNaN(v) ? null : v;
    }
    return cell.textContent.trim().toLowerCase();
  }
  function sortBy(table, col, th) {
    var numeric = th.getAttribute("data-type") === "num";
    // First click: numbers high-to-low, text A-to-Z; later clicks flip.
    var was = th.getAttribute("aria-sort");
    var dir = was === null ? (numeric ? "descending" : "ascending")
      : (was === "ascending" ? "descending" : "ascending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var ka = key(a.cells[col], numeric), kb = key(b.cells[col], numeric);
      if (ka === null && kb === null) return 0;
      if (ka === null) return 1;
      if (kb === null) return -1;
      var c = ka < kb ? -1 : ka > kb ? 1 : 0;
      return dir === "ascending" ? c : -c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (h) {
      h.removeAttribute("aria-sort");
    });
    th.setAttribute("aria-sort", dir);
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    if (!table.tHead || !table.tBodies.length) return;
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
      th.classList.add("sort");
      th.setAttribute("tabindex", "0");
      th.addEventListener("click", function () { sortBy(table, col, th); });
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sortBy(table, col, th); }
      });
    });
    table.classList.add("js-sortable");
  });
})();
