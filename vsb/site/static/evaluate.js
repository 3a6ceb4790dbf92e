// The blinded /evaluate session: runs from disk (file://) or a server, nothing fetched.
// The page knows no model name and no control answer: strips are opaque target ids, their
// pictures opaque file names, models opaque group numbers mapped to letters shuffled per
// session, and comparisons come in decks drawn at build time in which controls are not
// marked (vsb/human/blinding.py). The session's items are drawn with a PRNG seeded per
// session (crypto.getRandomValues). The export names targets; `vsb human import --release`
// resolves them. Progress lives in localStorage, so a reload loses nothing. Every text from
// the data is set with textContent (never as HTML).
(function () {
  "use strict";
  var DATA = JSON.parse(document.getElementById("evaluate-data").textContent);
  var KEY = "vsb-evaluate:" + DATA.root_hash;
  var DIMS = DATA.dimensions;
  var STRIPS = {};  // target id -> {story, group, images}
  DATA.stories.forEach(function (s) {
    s.strips.forEach(function (t) { STRIPS[t.target] = {story: s, group: t.group, images: t.images}; });
  });
  var $ = function (id) { return document.getElementById(id); };
  var state = null;
  var shownAt = null;
  var activeDim = 0;

  function randomSeed() {
    var a = new Uint32Array(2);
    window.crypto.getRandomValues(a);
    return a;
  }
  function hex(words) {
    return Array.prototype.map.call(words, function (w) {
      return ("00000000" + w.toString(16)).slice(-8);
    }).join("");
  }
  function mulberry32(seed) {  // small seeded PRNG: the session's plan is a function of it
    return function () {
      seed = (seed + 0x6D2B79F5) | 0;
      var t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }
  function shuffle(list, rand) {
    var a = list.slice();
    for (var i = a.length - 1; i > 0; i--) {
      var j = Math.floor(rand() * (i + 1));
      var t = a[i]; a[i] = a[j]; a[j] = t;
    }
    return a;
  }
  function letterName(i) {
    return i < 26 ? String.fromCharCode(65 + i) : "A" + String.fromCharCode(65 + i - 26);
  }

  function makePlan(seed) {
    var rand = mulberry32(seed);
    var cfg = DATA.config;
    var groups = [];
    for (var g = 0; g < DATA.n_groups; g++) groups.push(g);
    var letterOf = {};
    shuffle(groups, rand).forEach(function (grp, i) { letterOf[grp] = letterName(i); });
    var items = [];
    shuffle(Object.keys(STRIPS).sort(), rand).slice(0, cfg.n_likert).forEach(function (t) {
      items.push({kind: "likert", target: t});
    });
    var deck = DATA.decks.length ? DATA.decks[Math.floor(rand() * DATA.decks.length)] : [];
    deck.forEach(function (p) {
      var flip = rand() < 0.5;
      items.push({kind: "pair", target_a: flip ? p[1] : p[0], target_b: flip ? p[0] : p[1]});
    });
    items = shuffle(items, rand);
    items.forEach(function (it, i) { it.item_id = "i" + ("00" + i).slice(-3); });
    var firstLikert = items.filter(function (it) { return it.kind === "likert"; })[0];
    if (firstLikert && cfg.n_repeat > 0) {
      items.push({kind: "likert", target: firstLikert.target, repeat_of: firstLikert.item_id,
        item_id: "i" + ("00" + items.length).slice(-3)});
    }
    items.forEach(function (it) {
      if (it.kind === "likert") it.letter = letterOf[STRIPS[it.target].group];
      else {
        it.letter_a = letterOf[STRIPS[it.target_a].group];
        it.letter_b = letterOf[STRIPS[it.target_b].group];
      }
    });
    return {items: items};
  }

  function save() {
    try { window.localStorage.setItem(KEY, JSON.stringify(state)); } catch (e) { /* full or off */ }
  }
  function load() {
    try {
      var s = JSON.parse(window.localStorage.getItem(KEY) || "null");
      var ok = s && s.v === 2 && s.items && s.items.every(function (it) {
        return STRIPS[it.target || it.target_a] && (!it.target_b || STRIPS[it.target_b]);
      });
      if (s && !ok) window.localStorage.removeItem(KEY);  // an older page's state: dropped
      return ok ? s : null;
    } catch (e) { return null; }
  }

  // Time on screen: counted while an item is shown and the page is visible.
  function flushTime() {
    if (!state || shownAt === null || state.index >= state.items.length) return;
    var id = state.items[state.index].item_id;
    var now = Date.now();
    state.times[id] = (state.times[id] || 0) + Math.max(0, now - shownAt) / 1000;
    shownAt = now;
    save();
  }

  function complete(it) {
    var a = state.answers[it.item_id];
    if (!a) return false;
    if (it.kind === "likert") return DIMS.every(function (d) { return a[d.key] >= 1; });
    return !!a.choice;
  }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function image(src, alt) {  // a picture in a button that enlarges it (click, Enter, Space)
    var img = el("img");
    img.setAttribute("src", src);
    img.setAttribute("alt", alt);
    img.setAttribute("loading", "eager");
    var b = el("button", "ev-zoom");
    b.type = "button";
    b.setAttribute("aria-label", "Enlarge " + alt);
    b.setAttribute("aria-haspopup", "dialog");
    b.appendChild(img);
    b.addEventListener("click", function () { zoom(src, alt); });
    return b;
  }
  function zoom(src, alt) {
    var d = $("ev-zoom");
    $("ev-zoom-img").setAttribute("src", src);
    $("ev-zoom-img").setAttribute("alt", alt);
    $("ev-zoom-caption").textContent = alt;
    d.showModal();
    $("ev-zoom-close").focus();
  }
  function sceneTexts(story) {
    var ol = el("ol", "ev-texts");
    story.texts.forEach(function (t) { ol.appendChild(el("li", null, t)); });
    return ol;
  }

  function renderLikert(it, body) {
    var strip = STRIPS[it.target], story = strip.story;
    body.appendChild(el("h2", null, "Version " + it.letter));
    var grid = el("div", "ev-scenes");
    strip.images.forEach(function (src, k) {
      var fig = el("figure", "ev-scene");
      fig.appendChild(image(src, "scene " + (k + 1) + ", version " + it.letter));
      var cap = el("figcaption");
      cap.appendChild(el("strong", null, "Scene " + (k + 1) + ". "));
      cap.appendChild(document.createTextNode(story.texts[k]));
      fig.appendChild(cap);
      grid.appendChild(fig);
    });
    body.appendChild(grid);
    var answers = state.answers[it.item_id] || {};
    var table = el("div", "ev-ratings");
    table.setAttribute("role", "group");
    table.setAttribute("aria-label", "ratings, 1 poor to 5 excellent");
    DIMS.forEach(function (d, di) {
      var row = el("div", "ev-dim" + (di === activeDim ? " active" : ""));
      row.setAttribute("data-dim", d.key);
      var label = el("div", "ev-dim-label");
      label.appendChild(el("strong", null, d.label));
      label.appendChild(el("span", "ev-dim-help", d.help));
      row.appendChild(label);
      var buttons = el("div", "ev-scale");
      for (var v = 1; v <= 5; v++) {
        var b = el("button", "ev-score", String(v));
        b.type = "button";
        b.setAttribute("data-value", String(v));
        b.setAttribute("aria-label", d.label + " " + v);
        b.setAttribute("aria-pressed", answers[d.key] === v ? "true" : "false");
        b.addEventListener("click", (function (dim, val) {
          return function () { rate(dim, val); };
        })(di, v));
        buttons.appendChild(b);
      }
      row.appendChild(buttons);
      table.appendChild(row);
    });
    body.appendChild(table);
  }

  function stripColumn(target, letter, side) {
    var col = el("div", "ev-version");
    col.setAttribute("data-side", side);
    col.appendChild(el("h3", null, "Version " + letter));
    var row = el("div", "ev-strip");
    STRIPS[target].images.forEach(function (src, k) {
      var fig = el("figure", "ev-thumb");
      fig.appendChild(image(src, "scene " + (k + 1) + ", version " + letter));
      fig.appendChild(el("figcaption", null, String(k + 1)));
      row.appendChild(fig);
    });
    col.appendChild(row);
    return col;
  }

  function renderPair(it, body) {
    var story = STRIPS[it.target_a].story;
    body.appendChild(el("h2", null, "Which version tells this story more coherently?"));
    body.appendChild(el("p", "note", "The same characters, objects and consequences throughout, as the text says."));
    body.appendChild(sceneTexts(story));
    var cols = el("div", "ev-pair");
    cols.appendChild(stripColumn(it.target_a, it.letter_a, "a"));
    cols.appendChild(stripColumn(it.target_b, it.letter_b, "b"));
    body.appendChild(cols);
    var chosen = (state.answers[it.item_id] || {}).choice;
    var choices = el("div", "ev-choices");
    [["a", "1 · Version " + it.letter_a + " is better"], ["tie", "2 · About the same"],
     ["b", "3 · Version " + it.letter_b + " is better"]].forEach(function (c) {
      var b = el("button", "ev-choice", c[1]);
      b.type = "button";
      b.setAttribute("data-choice", c[0]);
      b.setAttribute("aria-pressed", chosen === c[0] ? "true" : "false");
      b.addEventListener("click", function () { choose(c[0]); });
      choices.appendChild(b);
    });
    body.appendChild(choices);
  }

  function show(panel) {
    ["ev-start", "ev-item", "ev-done"].forEach(function (id) { $(id).hidden = id !== panel; });
  }

  function render() {
    $("ev-message").textContent = "";
    if (!state) { show("ev-start"); return; }
    if (state.index >= state.items.length) { renderDone(); return; }
    show("ev-item");
    var it = state.items[state.index];
    var body = $("ev-body");
    body.textContent = "";
    body.setAttribute("data-kind", it.kind === "likert" ? "likert" : "pair");
    body.setAttribute("data-item", it.item_id);
    if (it.kind === "likert") renderLikert(it, body); else renderPair(it, body);
    $("ev-position").textContent = "Item " + (state.index + 1) + " of " + state.items.length;
    $("ev-bar").value = state.index / state.items.length;
    $("ev-prev").disabled = state.index === 0;
    $("ev-next").textContent = state.index === state.items.length - 1 ? "Finish →" : "Next →";
    if (shownAt === null && document.visibilityState !== "hidden") shownAt = Date.now();
  }

  function answered() {
    return state.items.filter(complete).length;
  }

  function renderDone() {
    show("ev-done");
    var n = answered();
    $("ev-summary").textContent = "You answered " + n + " of " + state.items.length +
      " items." + (n < state.items.length ? " Unanswered items are left out of the file." : "");
  }

  function go(index) {
    flushTime();
    state.index = Math.max(0, Math.min(index, state.items.length));
    activeDim = 0;
    if (state.index < state.items.length) {
      var it = state.items[state.index], a = state.answers[it.item_id] || {};
      if (it.kind === "likert") {
        var first = DIMS.findIndex(function (d) { return !(a[d.key] >= 1); });
        activeDim = first < 0 ? 0 : first;
      }
    }
    shownAt = state.index < state.items.length ? Date.now() : null;
    save();
    render();
    window.scrollTo(0, 0);
    if (state.index >= state.items.length) $("ev-export").focus();  // Finish: Download next
  }

  function next() {
    var it = state.items[state.index];
    if (!complete(it)) {
      $("ev-message").textContent = it.kind === "likert"
        ? "Rate all six aspects first." : "Choose one of the three answers first.";
      return;
    }
    go(state.index + 1);
  }

  function rate(dim, value) {
    var it = state.items[state.index];
    var a = state.answers[it.item_id] || {};
    a[DIMS[dim].key] = value;
    state.answers[it.item_id] = a;
    activeDim = Math.min(dim + 1, DIMS.length - 1);
    flushTime();
    render();
  }

  function choose(choice) {
    var it = state.items[state.index];
    state.answers[it.item_id] = {choice: choice};
    flushTime();
    render();
  }

  function start(rater) {
    var words = randomSeed();
    var plan = makePlan(words[0]);
    state = {v: 2, session_id: hex(words), rater_id: rater, started_at: new Date().toISOString(),
      items: plan.items, answers: {}, times: {}, index: 0};
    shownAt = Date.now();
    activeDim = 0;
    save();
    render();
  }

  function exportFile() {
    flushTime();
    var items = [];
    state.items.forEach(function (it, i) {
      if (!complete(it)) return;
      var a = state.answers[it.item_id];
      var out = {kind: it.kind, item_id: it.item_id,
        time_s: Math.min(86400, Math.round((state.times[it.item_id] || 0) * 100) / 100),
        order: i};
      if (it.kind === "likert") {
        out.target = it.target; out.letter = it.letter; out.repeat_of = it.repeat_of || null;
        out.ratings = {};
        DIMS.forEach(function (d) { out.ratings[d.key] = a[d.key]; });
      } else {
        out.target_a = it.target_a; out.target_b = it.target_b;
        out.letter_a = it.letter_a; out.letter_b = it.letter_b; out.choice = a.choice;
      }
      items.push(out);
    });
    var doc = {version: DATA.version, format: DATA.format, synthetic: false, note: "",
      rater_id: state.rater_id, session_id: state.session_id, release: DATA.release,
      root_hash: DATA.root_hash, started_at: state.started_at,
      finished_at: new Date().toISOString(), items: items};
    var blob = new Blob([JSON.stringify(doc, null, 2) + "\n"], {type: "application/json"});
    var url = URL.createObjectURL(blob);
    var link = document.createElement("a");
    link.href = url;
    link.download = "vsb-ratings-" + state.rater_id + "-" + state.session_id.slice(0, 8) + ".json";
    document.body.appendChild(link);
    link.click();
    link.remove();
    window.setTimeout(function () { URL.revokeObjectURL(url); }, 10000);
  }

  function onKey(e) {
    if (!state || e.altKey || e.ctrlKey || e.metaKey) return;
    if (e.target && (e.target.tagName === "INPUT" || e.target.tagName === "TEXTAREA")) return;
    if ($("ev-zoom").open) return;  // the enlarged picture has the keys (Esc closes it)
    var zoomer = e.target && e.target.classList && e.target.classList.contains("ev-zoom");
    if (zoomer && (e.key === "Enter" || e.key === " ")) return;  // the button enlarges
    if (state.index >= state.items.length) return;
    var it = state.items[state.index];
    var k = e.key;
    if (k === "ArrowRight" || k === "Enter") { e.preventDefault(); next(); return; }
    if (k === "ArrowLeft") { e.preventDefault(); if (state.index > 0) go(state.index - 1); return; }
    if (it.kind === "likert") {
      if (k >= "1" && k <= "5" && k.length === 1) { e.preventDefault(); rate(activeDim, Number(k)); }
      else if (k === "ArrowDown") { e.preventDefault(); activeDim = Math.min(activeDim + 1, DIMS.length - 1); render(); }
      else if (k === "ArrowUp") { e.preventDefault(); activeDim = Math.max(activeDim - 1, 0); render(); }
    } else if (k === "1" || k === "2" || k === "3") {
      e.preventDefault();
      choose({"1": "a", "2": "tie", "3": "b"}[k]);
    }
  }

  $("ev-start-form").addEventListener("submit", function (e) {
    e.preventDefault();
    var rater = $("ev-rater").value.trim();
    if (!new RegExp(DATA.rater_id_pattern).test(rater)) {
      $("ev-rater-error").textContent = "A rater id is " + DATA.rater_id_rule + ".";
      return;
    }
    $("ev-rater-error").textContent = "";
    start(rater);
  });
  $("ev-prev").addEventListener("click", function () { if (state.index > 0) go(state.index - 1); });
  $("ev-next").addEventListener("click", next);
  $("ev-export").addEventListener("click", exportFile);
  $("ev-back").addEventListener("click", function () { go(state.items.length - 1); });
  $("ev-new").addEventListener("click", function () {
    var b = $("ev-new");
    if (b.getAttribute("data-armed") !== "1") {
      b.setAttribute("data-armed", "1");
      b.textContent = "Discard this session? Click again";
      return;
    }
    window.localStorage.removeItem(KEY);
    state = null;
    shownAt = null;
    b.removeAttribute("data-armed");
    b.textContent = "Start a new session";
    render();
  });
  document.addEventListener("keydown", onKey);
  $("ev-zoom-close").addEventListener("click", function () { $("ev-zoom").close(); });
  $("ev-zoom").addEventListener("click", function (e) {  // a click beside the picture closes
    if (e.target === $("ev-zoom")) $("ev-zoom").close();
  });
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "hidden") { flushTime(); shownAt = null; }
    else if (state && state.index < state.items.length) shownAt = Date.now();
  });
  window.addEventListener("pagehide", flushTime);

  state = load();
  if (state && state.index < state.items.length) shownAt = Date.now();
  if (!DATA.stories.length) {
    $("ev-start").hidden = false;
    $("ev-start-form").hidden = true;
    $("ev-start").appendChild(el("p", "ev-error", "This release has no story with complete images to rate."));
  } else {
    render();
  }
})();
