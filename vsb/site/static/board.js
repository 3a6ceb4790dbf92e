// Client-side views over tables that hold everything (no request, no CDN):
// - the condition selector shows one condition's rows of every table[data-conditioned] and
//   its plots (section.plots[data-condition]);
// - the column picker shows or hides the columns (th/td[data-col]) of its table (on a phone,
//   those whose box says data-phone="off" start hidden);
// - the story filters (category, difficulty, scene count, failing dimension, search) hide
//   the rows of table#stories that do not match and say how many are shown.
// Without JavaScript every row and column is in the page.
(function () {
  "use strict";
  function each(list, fn) { Array.prototype.forEach.call(list, fn); }

  // a table keeps exactly one tab stop in its header row, on a visible header
  function keepTabStop(table) {
    if (!table.tHead) return;
    var ths = Array.prototype.slice.call(table.tHead.rows[0].cells);
    var current = ths.filter(function (h) { return h.getAttribute("tabindex") === "0"; })[0];
    if (current && !current.hidden) return;
    var first = ths.filter(function (h) { return !h.hidden; })[0];
    ths.forEach(function (h) { h.setAttribute("tabindex", h === first ? "0" : "-1"); });
  }

  each(document.querySelectorAll("select.condition-select"), function (select) {
    function show() {
      var c = select.value;
      each(document.querySelectorAll("table[data-conditioned] tbody tr[data-condition]"),
        function (tr) { tr.hidden = tr.getAttribute("data-condition") !== c; });
      each(document.querySelectorAll("section.plots[data-condition]"),
        function (s) { s.hidden = s.getAttribute("data-condition") !== c; });
      each(document.querySelectorAll(".shown-condition"), function (e) { e.textContent = c; });
    }
    select.addEventListener("change", show);
    show();
  });

  // on a phone a board leads with memory coherence: the columns marked data-phone="off"
  // start hidden there (the picker brings them back)
  var phone = window.matchMedia && window.matchMedia("(max-width: 600px)").matches;
  each(document.querySelectorAll("fieldset[data-table]"), function (fs) {
    var table = document.getElementById(fs.getAttribute("data-table"));
    if (!table) return;
    if (phone) {
      each(fs.querySelectorAll('input[data-phone="off"]'), function (box) { box.checked = false; });
    }
    function apply(box) {
      each(table.querySelectorAll('[data-col="' + box.value + '"]'),
        function (cell) { cell.hidden = !box.checked; });
      keepTabStop(table);
    }
    each(fs.querySelectorAll("input[type=checkbox]"), function (box) {
      box.addEventListener("change", function () { apply(box); });
      apply(box);
    });
  });

  var form = document.getElementById("story-filters");
  var stories = document.getElementById("stories");
  if (form && stories) {
    var out = form.querySelector("output");
    var filter = function () {
      var q = form.elements.q.value.trim().toLowerCase();
      var want = {
        category: form.elements.category.value,
        difficulty: form.elements.difficulty.value,
        scenes: form.elements.scenes.value
      };
      var fail = form.elements.fail.value;
      var rows = stories.tBodies[0].rows, shown = 0;
      each(rows, function (tr) {
        var ok = (!q || tr.getAttribute("data-id").indexOf(q) >= 0) &&
          (!fail || (" " + tr.getAttribute("data-fail") + " ").indexOf(" " + fail + " ") >= 0);
        Object.keys(want).forEach(function (k) {
          if (want[k] && tr.getAttribute("data-" + k) !== want[k]) ok = false;
        });
        tr.hidden = !ok;
        if (ok) shown += 1;
      });
      if (out) out.textContent = shown + " of " + rows.length + " stories shown";
    };
    form.addEventListener("input", filter);
    form.addEventListener("change", filter);
    form.addEventListener("submit", function (e) { e.preventDefault(); });
    filter();
  }
})();
