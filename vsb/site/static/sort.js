// Sortable tables: every table.sortable sorts by a column when its header is activated.
// Keyboard: one tab stop per table (a roving tabindex over the header row): Tab reaches the
// table's current header, Left/Right/Home/End move between headers, Enter or Space sorts.
// Numeric columns (th[data-type=num]) sort by each cell's data-v; empty values sort last.
// The sort direction is announced through aria-sort; the arrow is decoration (aria-hidden).
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
    // First activation: numbers high-to-low, text A-to-Z; later ones flip.
    var was = th.getAttribute("aria-sort");
    var dir = (was === null || was === "none") ? (numeric ? "descending" : "ascending")
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
    var live = table.querySelector(".sort-status");
    if (live) live.textContent = "sorted by " + th.getAttribute("data-label") + ", " + dir;
  }
  function visible(ths) {
    return ths.filter(function (h) { return !h.hidden; });
  }
  function focusHeader(ths, th) {
    ths.forEach(function (h) { h.setAttribute("tabindex", h === th ? "0" : "-1"); });
    th.focus();
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    if (!table.tHead || !table.tBodies.length) return;
    var ths = Array.prototype.slice.call(table.tHead.rows[0].cells);
    var status = document.createElement("span");
    status.className = "sort-status sr-only";
    status.setAttribute("aria-live", "polite");
    if (table.caption) table.caption.appendChild(status);
    ths.forEach(function (th, col) {
      th.classList.add("sort");
      th.setAttribute("data-label", th.textContent.trim());
      th.setAttribute("tabindex", col === 0 ? "0" : "-1");
      th.setAttribute("title", (th.getAttribute("title") ? th.getAttribute("title") + " — " : "") +
        "sort by this column (Enter); arrow keys move between columns");
      var icon = document.createElement("span");
      icon.className = "sort-icon";
      icon.setAttribute("aria-hidden", "true");
      th.appendChild(icon);
      th.addEventListener("click", function () { sortBy(table, col, th); focusHeader(ths, th); });
      th.addEventListener("keydown", function (e) {
        var shown = visible(ths), i = shown.indexOf(th), next = null;
        if (e.key === "Enter" || e.key === " ") {
          e.preventDefault();
          sortBy(table, col, th);
          return;
        }
        if (e.key === "ArrowRight") next = shown[Math.min(i + 1, shown.length - 1)];
        else if (e.key === "ArrowLeft") next = shown[Math.max(i - 1, 0)];
        else if (e.key === "Home") next = shown[0];
        else if (e.key === "End") next = shown[shown.length - 1];
        if (next) { e.preventDefault(); focusHeader(ths, next); }
      });
    });
    table.classList.add("js-sortable");
  });
})();
