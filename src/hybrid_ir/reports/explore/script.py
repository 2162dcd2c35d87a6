"""The explorer page's script: plain JavaScript (no framework, no build step), inlined by
:mod:`hybrid_ir.reports.explore.page` and allowed to run by the page's content security policy
through its sha256. Kept as a Python string, so that the rule's code digest
(:mod:`hybrid_ir.planning.code_digest`) covers it and the package needs no data files.

What it does with the page's data (:func:`hybrid_ir.reports.explore.data.explorer_data`): the
system, baseline and measure pickers; the sorted per-topic bar chart with wins, losses and ties; the
mean difference with its interval and p (computed in Python, as the table's); the breakdown by topic
label (interval from the t quantiles the data carries); a topic's query and both rankings' top k
side by side, with grades, lines between the lists and each document's text; keyboard navigation
and the state in the address (``#system=..&baseline=..&measure=..&topic=..``). Every text from
an input file is added as a text node or an attribute, never parsed as HTML; formulas go to
KaTeX (``trust: false``), and a formula it refuses is shown as TeX with the reason as its title.
Formulas are found by the rules of :mod:`hybrid_ir.reports.explore.text` (``splitMath``).
"""

SCRIPT = r"""(function () {
  "use strict";
  var DATA = JSON.parse(document.getElementById("explorer-data").textContent);
  var KATEX = window.katex && typeof window.katex.render === "function" ? window.katex : null;
  var SVG = "http://www.w3.org/2000/svg";
  var TIE = 1e-12;
  var systems = DATA.systems;
  var measures = DATA.measures;
  var state = { system: DATA.defaults.system, baseline: DATA.defaults.baseline, measure: 0,
    topic: null };
  var highlight = null;
  var lastHash = null;
  var order = [];

  function own(object, key) {
    return object !== null && object !== undefined &&
      Object.prototype.hasOwnProperty.call(object, key);
  }

  // Elements are built with text nodes and attributes only: no text of an input file is ever
  // parsed as HTML.
  function el(tag, props, children) {
    var node = document.createElement(tag);
    Object.keys(props || {}).forEach(function (key) {
      var value = props[key];
      if (value === undefined || value === null) return;
      if (key === "text") node.textContent = value;
      else if (key === "className") node.className = value;
      else node.setAttribute(key, String(value));
    });
    (children || []).forEach(function (child) {
      if (child !== null && child !== undefined) node.append(child);
    });
    return node;
  }

  function svgEl(tag, attrs, text) {
    var node = document.createElementNS(SVG, tag);
    Object.keys(attrs || {}).forEach(function (key) {
      node.setAttribute(key, String(attrs[key]));
    });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // --- text with formulas (the rules of hybrid_ir.reports.explore.text) --------------------------
  var PAIRS = [["$$", "$$"], ["\\[", "\\]"], ["\\(", "\\)"], ["$", "$"]];

  function escaped(text, at) {
    var count = 0;
    while (at - count - 1 >= 0 && text[at - count - 1] === "\\") count += 1;
    return count % 2 === 1;
  }

  function closingAt(text, closing, start) {
    var at = start;
    for (;;) {
      var found = text.indexOf(closing, at);
      if (found < 0 || closing[0] !== "$" || !escaped(text, found)) return found;
      at = found + 1;
    }
  }

  function splitMath(text) {
    var parts = [];
    var plain = 0;
    var at = 0;
    while (at < text.length) {
      var char = text[at];
      if (char === "\\" && at + 1 < text.length && text[at + 1] !== "[" && text[at + 1] !== "(") {
        at += 2;
        continue;
      }
      var pair = null;
      if (char === "$" || char === "\\") {
        for (var i = 0; i < PAIRS.length; i += 1) {
          if (text.startsWith(PAIRS[i][0], at)) { pair = PAIRS[i]; break; }
        }
      }
      if (pair === null) { at += 1; continue; }
      var end = closingAt(text, pair[1], at + pair[0].length);
      if (end < 0 || end === at + pair[0].length) { at += pair[0].length; continue; }
      if (plain < at) parts.push({ text: text.slice(plain, at) });
      var stop = end + pair[1].length;
      parts.push({ tex: text.slice(at + pair[0].length, end),
        display: pair[0] === "$$" || pair[0] === "\\[", raw: text.slice(at, stop) });
      plain = at = stop;
    }
    if (plain < text.length) parts.push({ text: text.slice(plain) });
    return parts;
  }

  function mathNode(part) {
    if (KATEX === null) return el("code", { className: "tex-source", text: part.raw });
    var span = el("span", { className: part.display ? "math display" : "math" });
    var options = { displayMode: part.display, throwOnError: true, trust: false,
      strict: "ignore", maxSize: 20, maxExpand: 300 };
    try {
      KATEX.render(part.tex, span, options);
      return span;
    } catch (error) {
      if (!part.display) {
        // Some inline formulas hold what only display math allows (\tag): shown as display.
        try {
          options.displayMode = true;
          KATEX.render(part.tex, span, options);
          span.className = "math display";
          return span;
        } catch (ignored) { /* the first error says why */ }
      }
      var message = error && error.message ? error.message : String(error);
      return el("code", { className: "tex-error", text: part.raw,
        title: "not rendered (" + message + "): shown as TeX" });
    }
  }

  function renderText(target, text) {
    splitMath(text || "").forEach(function (part) {
      target.append(part.tex === undefined ? part.text : mathNode(part));
    });
    return target;
  }

  function cutNote(count) {
    if (!count) return null;
    return el("span", { className: "cut",
      text: " … " + count.toLocaleString("en") + " more characters not shown" });
  }

  // --- numbers --------------------------------------------------------------------------------
  function signed(value, digits) {
    if (value === null || value === undefined) return "–";
    var text = value.toFixed(digits === undefined ? 3 : digits);
    if (Number(text) === 0) text = (0).toFixed(digits === undefined ? 3 : digits);
    return (Number(text) > 0 ? "+" : "") + text;
  }

  function plain(value) {
    return value === null || value === undefined ? "–" : value.toFixed(3);
  }

  function pValue(p) {
    if (p === null || p === undefined) return "–";
    if (p < 0.0001) return p.toExponential(1);
    return String(Number(p.toPrecision(2)));
  }

  // --- state in the address ------------------------------------------------------------------
  function systemIndex(label) {
    for (var i = 0; i < systems.length; i += 1) if (systems[i].label === label) return i;
    return -1;
  }

  function readHash() {
    var params = new URLSearchParams(location.hash.replace(/^#/, ""));
    var found;
    if (params.has("system") && (found = systemIndex(params.get("system"))) >= 0) {
      state.system = found;
    }
    if (params.has("baseline") && (found = systemIndex(params.get("baseline"))) >= 0) {
      state.baseline = found;
    }
    if (params.has("measure")) {
      for (var m = 0; m < measures.length; m += 1) {
        if (measures[m].key === params.get("measure")) state.measure = m;
      }
    }
    if (params.has("topic")) state.topic = params.get("topic");
  }

  function writeHash() {
    var params = new URLSearchParams();
    if (state.system !== null) params.set("system", systems[state.system].label);
    if (state.baseline !== null) params.set("baseline", systems[state.baseline].label);
    if (measures.length) params.set("measure", measures[state.measure].key);
    if (state.topic !== null) params.set("topic", state.topic);
    var hash = "#" + params.toString();
    lastHash = hash;
    if (location.hash === hash) return;
    try {
      history.replaceState(null, "", hash);
    } catch (error) {
      try { location.replace(hash); } catch (ignored) { /* a page without an address */ }
    }
  }

  // --- what is compared ----------------------------------------------------------------------
  function measure() { return measures[state.measure]; }
  function view() { return DATA.views[measure().view]; }
  function space() { return DATA.spaces[view().space]; }
  function label(index) { return index === null ? "–" : systems[index].label; }

  function scoresOf(index) {
    var byMeasure = DATA.scores[measure().key] || {};
    return own(byMeasure, String(index)) ? byMeasure[String(index)] : null;
  }

  function compared() {
    var a = scoresOf(state.system);
    var b = scoresOf(state.baseline);
    var rows = [];
    var missing = [];
    var position = {};
    space().order.forEach(function (topic, i) {
      position[topic] = i;
      var inA = own(a, topic);
      var inB = own(b, topic);
      if (inA && inB) {
        rows.push({ topic: topic, a: a[topic], b: b[topic], diff: a[topic] - b[topic] });
      } else if (inA || inB) {
        missing.push({ topic: topic, lacks: inA ? label(state.baseline) : label(state.system) });
      }
    });
    rows.sort(function (x, y) {
      return (y.diff - x.diff) || (position[x.topic] - position[y.topic]);
    });
    return { rows: rows, missing: missing, a: a, b: b };
  }

  function outcome(diff) { return diff > TIE ? "win" : (diff < -TIE ? "loss" : "tie"); }

  function pairRow() {
    var s = state.system;
    var b = state.baseline;
    var pairs = DATA.pairs[measure().key] || {};
    var key = Math.min(s, b) + "," + Math.max(s, b);
    if (!own(pairs, key)) return null;
    var row = pairs[key];
    if (s < b) return row;
    return [row[0], row[1] === null ? null : -row[1], row[3] === null ? null : -row[3],
      row[2] === null ? null : -row[2], row[4], row[6], row[5], row[7]];
  }

  // --- the page ------------------------------------------------------------------------------
  var app = document.getElementById("app");
  var parts = {};

  function build() {
    app.textContent = "";
    var notice = null;
    if (KATEX === null) {
      var why = DATA.renderer && DATA.renderer.reason ? DATA.renderer.reason
        : "the math renderer did not load";
      notice = el("p", { id: "renderer-notice", className: "notice",
        text: "Formulas are shown as TeX source: no math renderer is on this page (" + why +
          ")." });
    }
    parts.system = el("select", { id: "system", "aria-label": "system" });
    parts.baseline = el("select", { id: "baseline", "aria-label": "baseline" });
    [parts.system, parts.baseline].forEach(function (select) {
      var groups = {};
      systems.forEach(function (system, i) {
        var block = system.block || "rows";
        if (!own(groups, block)) {
          groups[block] = el("optgroup", { label: block });
          select.append(groups[block]);
        }
        groups[block].append(el("option", { value: i, text: system.label }));
      });
    });
    parts.measure = el("select", { id: "measure", "aria-label": "measure" });
    measures.forEach(function (m, i) {
      parts.measure.append(el("option", { value: i, text: m.key }));
    });
    parts.swap = el("button", { id: "swap", type: "button", title: "swap (s)",
      text: "⇄ swap" });
    var controls = el("div", { className: "controls" }, [
      el("label", {}, ["System ", parts.system]),
      el("label", {}, ["Baseline ", parts.baseline]),
      el("label", {}, ["Measure ", parts.measure]),
      parts.swap,
    ]);
    parts.summary = el("p", { id: "summary" });
    parts.chart = el("div", { id: "chart" });
    parts.legend = el("p", { id: "legend", className: "legend" });
    parts.missing = el("div", { id: "missing" });
    parts.breakdown = el("section", { id: "breakdown" });
    parts.topic = el("section", { id: "topic" });
    var notes = el("ul", { id: "notes", className: "notes" });
    (DATA.notes || []).forEach(function (note) { notes.append(el("li", { text: note })); });
    var help = el("p", { id: "help", className: "help", text: "Keys: ← → or j k: previous / " +
      "next topic in the chart's order; Home / End: first / last; s: swap system and " +
      "baseline; m / M: next / previous measure; Enter on a bar opens its topic. The address " +
      "keeps the systems, measure and topic: a copied link opens this view." });
    app.append(notice || "", controls, parts.summary, parts.chart, parts.legend, parts.missing,
      parts.breakdown, parts.topic, notes, help);

    parts.system.addEventListener("change", function () {
      state.system = Number(parts.system.value); update();
    });
    parts.baseline.addEventListener("change", function () {
      state.baseline = Number(parts.baseline.value); update();
    });
    parts.measure.addEventListener("change", function () {
      state.measure = Number(parts.measure.value); update();
    });
    parts.swap.addEventListener("click", swap);
  }

  function swap() {
    var system = state.system;
    state.system = state.baseline;
    state.baseline = system;
    update();
  }

  function update() {
    if (state.system === null || state.baseline === null) {
      parts.summary.textContent = "This page needs two systems with per-topic scores; it has " +
        systems.length + ".";
      return;
    }
    parts.system.value = String(state.system);
    parts.baseline.value = String(state.baseline);
    if (measures.length) parts.measure.value = String(state.measure);
    var data = compared();
    order = data.rows.map(function (row) { return row.topic; });
    var topics = space().order;
    if (state.topic === null || topics.indexOf(state.topic) < 0) {
      state.topic = order.length ? order[0] : (topics.length ? topics[0] : null);
    }
    highlight = null;
    renderSummary(data);
    renderChart(data);
    renderMissing(data);
    renderBreakdown(data);
    renderTopic(data);
    writeHash();
  }

  function renderSummary(data) {
    var m = measure();
    var out = parts.summary;
    out.textContent = "";
    if (state.system === state.baseline) {
      out.textContent = "Pick two different systems.";
      return;
    }
    var lacking = [state.system, state.baseline].filter(function (index) {
      return scoresOf(index) === null;
    });
    if (lacking.length) {
      out.textContent = lacking.map(label).join(" and ") + " has no per-topic " + m.key +
        " scores here, so there is nothing to compare on this measure.";
      return;
    }
    var row = pairRow();
    if (row === null || row[0] === 0) {
      out.textContent = "No topic has a " + m.key + " score for both systems.";
      return;
    }
    var interval = row[2] === null
      ? " (no interval: " + (row[0] < 2 ? "fewer than 2 topics"
        : "the differences do not vary") + ")"
      : " (95% CI " + signed(row[2]) + " to " + signed(row[3]) + ")";
    out.append(
      el("strong", { text: label(state.system) }), " − ",
      el("strong", { text: label(state.baseline) }),
      " on " + m.key + ": mean difference ",
      el("span", { className: "effect", text: signed(row[1]) }), interval,
      ", two-tailed paired t-test p = ", el("span", { className: "p", text: pValue(row[4]) }),
      " over the " + row[0] + " topics both score; ",
      el("span", { className: "count win", text: row[5] + " wins" }), ", ",
      el("span", { className: "count loss", text: row[6] + " losses" }), ", ",
      el("span", { className: "count tie", text: row[7] + " ties" }), ".");
  }

  function renderChart(data) {
    var box = parts.chart;
    box.textContent = "";
    parts.legend.textContent = "";
    var rows = data.rows;
    if (!rows.length || state.system === state.baseline) return;
    var width = 1000;
    var height = 240;
    var left = 56;
    var top = 10;
    var plotWidth = width - left - 10;
    var plotHeight = height - top - 30;
    var high = Math.max(0, rows[0].diff);
    var low = Math.min(0, rows[rows.length - 1].diff);
    if (high - low < 1e-9) { high = 0.5; low = -0.5; }
    function y(value) { return top + (high - value) / (high - low) * plotHeight; }
    var step = plotWidth / rows.length;
    var chart = svgEl("svg", { viewBox: "0 0 " + width + " " + height, role: "img",
      "aria-label": "per-topic differences, sorted", preserveAspectRatio: "none" });
    chart.append(svgEl("line", { x1: left, x2: width - 10, y1: y(0), y2: y(0),
      "class": "zero" }));
    [high, 0, low].forEach(function (value) {
      if (value === 0 && (high === 0 || low === 0)) return;
      chart.append(svgEl("text", { x: left - 6, y: y(value) + 4, "text-anchor": "end",
        "class": "tick" }, signed(value)));
    });
    chart.append(svgEl("text", { x: left - 6, y: y(0) + 4, "text-anchor": "end",
      "class": "tick" }, "0"));
    var counts = { win: 0, loss: 0, tie: 0 };
    rows.forEach(function (row, i) {
      var kind = outcome(row.diff);
      counts[kind] += 1;
      var barWidth = Math.max(Math.min(step * 0.8, 30), 1);
      var x = left + i * step + (step - barWidth) / 2;
      var barHeight = Math.abs(y(row.diff) - y(0));
      var bar = svgEl("rect", {
        x: x.toFixed(2), width: barWidth.toFixed(2),
        y: (kind === "tie" ? y(0) - 1 : Math.min(y(row.diff), y(0))).toFixed(2),
        height: (kind === "tie" ? 2 : Math.max(barHeight, 1)).toFixed(2),
        "class": "bar " + kind + (row.topic === state.topic ? " selected" : ""),
        "data-topic": row.topic, "data-diff": String(row.diff), tabindex: "0",
        role: "button",
        "aria-label": row.topic + ": " + signed(row.diff)
      });
      bar.append(svgEl("title", {}, row.topic + ": " + signed(row.diff) + " (" +
        plain(row.a) + " against " + plain(row.b) + ")"));
      bar.addEventListener("click", function () { selectTopic(row.topic); });
      bar.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          selectTopic(row.topic);
        }
      });
      chart.append(bar);
    });
    var first = rows[0].topic;
    var last = rows[rows.length - 1].topic;
    chart.append(svgEl("text", { x: left, y: height - 8, "class": "tick" },
      first + " (largest gain)"));
    chart.append(svgEl("text", { x: width - 10, y: height - 8, "text-anchor": "end",
      "class": "tick" }, last + " (largest loss)"));
    box.append(chart);
    parts.legend.append(
      el("span", { className: "swatch win" }), " " + counts.win + " wins  ",
      el("span", { className: "swatch loss" }), " " + counts.loss + " losses  ",
      el("span", { className: "swatch tie" }), " " + counts.tie + " ties: " +
      label(state.system) + " − " + label(state.baseline) + " per topic, sorted; click a bar " +
      "(or use ← →) to see its topic.");
  }

  function renderMissing(data) {
    var box = parts.missing;
    box.textContent = "";
    if (!data.missing.length || state.system === state.baseline) return;
    var list = el("ul", {});
    data.missing.forEach(function (entry) {
      var item = el("li", {}, [el("a", { href: "#", "data-topic": entry.topic,
        text: entry.topic }), ": no " + measure().key + " score for " + entry.lacks]);
      item.firstChild.addEventListener("click", function (event) {
        event.preventDefault();
        selectTopic(entry.topic);
      });
      list.append(item);
    });
    box.append(el("p", { className: "missing-head", text: "Not compared (" +
      data.missing.length + " topics scored for one system only; a measure may leave a " +
      "topic out, as ARQMath's prime measures do where a run keeps no judged answer):" }), list);
  }

  // --- breakdown by topic labels -------------------------------------------------------------
  function intervalOf(diffs) {
    var n = diffs.length;
    if (!n) return { n: 0, mean: null, low: null, high: null };
    var mean = diffs.reduce(function (s, d) { return s + d; }, 0) / n;
    if (n < 2) return { n: n, mean: mean, low: null, high: null };
    var variance = diffs.reduce(function (s, d) { return s + (d - mean) * (d - mean); }, 0) /
      (n - 1);
    if (variance === 0) return { n: n, mean: mean, low: null, high: null };
    var t = DATA.t975[Math.min(n - 2, DATA.t975.length - 1)];
    var half = t * Math.sqrt(variance / n);
    return { n: n, mean: mean, low: mean - half, high: mean + half };
  }

  function renderBreakdown(data) {
    var box = parts.breakdown;
    box.textContent = "";
    var labels = space().labels;
    if (!labels || !data.rows.length || state.system === state.baseline) return;
    box.append(el("h2", { text: "By topic label" }));
    var byTopic = {};
    data.rows.forEach(function (row) { byTopic[row.topic] = row; });
    var scale = 0;
    var tables = [];
    labels.columns.forEach(function (column, c) {
      var groups = {};
      Object.keys(labels.values).forEach(function (topic) {
        if (!own(byTopic, topic)) return;
        var value = labels.values[topic][c];
        if (!own(groups, value)) groups[value] = [];
        groups[value].push(byTopic[topic]);
      });
      var values = (labels.order[column] || []).filter(function (v) { return own(groups, v); });
      var stats = values.map(function (value) {
        var rows = groups[value];
        var summary = intervalOf(rows.map(function (r) { return r.diff; }));
        summary.value = value;
        summary.topics = rows.map(function (r) { return r.topic; });
        summary.outcomes = { win: 0, loss: 0, tie: 0 };
        rows.forEach(function (r) { summary.outcomes[outcome(r.diff)] += 1; });
        [summary.mean, summary.low, summary.high].forEach(function (v) {
          if (v !== null) scale = Math.max(scale, Math.abs(v));
        });
        return summary;
      });
      tables.push({ column: column, stats: stats });
    });
    scale = scale || 1;
    tables.forEach(function (table) {
      var body = el("tbody", {});
      table.stats.forEach(function (s) {
        var glyph = svgEl("svg", { viewBox: "0 0 160 14", width: 160, height: 14 });
        function x(v) { return 80 + v / scale * 76; }
        glyph.append(svgEl("line", { x1: 80, x2: 80, y1: 0, y2: 14, "class": "zero" }));
        if (s.low !== null) {
          glyph.append(svgEl("line", { x1: x(s.low), x2: x(s.high), y1: 7, y2: 7,
            "class": "whisker" }));
        }
        if (s.mean !== null) {
          glyph.append(svgEl("circle", { cx: x(s.mean), cy: 7, r: 3.5,
            "class": "dot " + outcome(s.mean) }));
        }
        var row = el("tr", { tabindex: "0", "data-value": s.value, title: "highlight these " +
          "topics in the chart" }, [
          el("td", { text: s.value }), el("td", { text: String(s.n) }),
          el("td", { text: signed(s.mean) }),
          el("td", { text: s.low === null ? "–" : signed(s.low) + " to " + signed(s.high) }),
          el("td", {}, [glyph]),
          el("td", { text: s.outcomes.win + " / " + s.outcomes.loss + " / " + s.outcomes.tie })
        ]);
        function toggle() {
          var key = table.column + "=" + s.value;
          highlight = highlight && highlight.key === key ? null : { key: key, topics: s.topics };
          applyHighlight();
        }
        row.addEventListener("click", toggle);
        row.addEventListener("keydown", function (event) {
          if (event.key === "Enter") { event.preventDefault(); toggle(); }
        });
        body.append(row);
      });
      box.append(el("table", { className: "breakdown", "data-column": table.column }, [
        el("caption", { text: table.column }),
        el("thead", {}, [el("tr", {}, ["value", "topics", "mean Δ", "95% CI", "", "W / L / T"]
          .map(function (h) { return el("th", { text: h }); }))]),
        body
      ]));
    });
    var missing = labels.missing.filter(function (topic) { return own(byTopic, topic); });
    if (missing.length) {
      box.append(el("p", { className: "missing-labels", text: missing.length +
        " compared topic(s) have no row in " + labels.file + " and are in no group: " +
        missing.join(", ") + "." }));
    }
  }

  function applyHighlight() {
    var topics = highlight ? highlight.topics : null;
    parts.chart.querySelectorAll("rect.bar").forEach(function (bar) {
      var dim = topics !== null && topics.indexOf(bar.getAttribute("data-topic")) < 0;
      bar.classList.toggle("dim", dim);
    });
    parts.breakdown.querySelectorAll("tr[data-value]").forEach(function (row) {
      var table = row.closest("table");
      var key = table.getAttribute("data-column") + "=" + row.getAttribute("data-value");
      row.classList.toggle("active", highlight !== null && highlight.key === key);
    });
  }

  // --- one topic -----------------------------------------------------------------------------
  function rankerOf(index, topic) {
    var choice = systems[index].rankers[String(measure().view)];
    if (choice === undefined) return null;
    if (typeof choice === "number") return choice;
    var byTopic = choice.by_measure[measure().key];
    return own(byTopic, topic) ? byTopic[topic] : null;
  }

  function topList(ranker, topic) {
    var entry = space().ranks[topic];
    if (!entry || ranker === null) return [];
    var ranks = entry.ranks[ranker];
    var list = [];
    entry.docs.forEach(function (doc, i) {
      if (ranks[i] >= 1 && ranks[i] <= DATA.settings.top_k) {
        list.push({ doc: doc, rank: ranks[i] });
      }
    });
    list.sort(function (x, y) { return x.rank - y.rank; });
    return list;
  }

  function otherRank(ranker, topic, doc) {
    var entry = space().ranks[topic];
    if (!entry || ranker === null) return 0;
    var i = entry.docs.indexOf(doc);
    return i < 0 ? 0 : entry.ranks[ranker][i];
  }

  function gradeOf(topic, doc) {
    var grades = view().grades[topic];
    return own(grades, doc) ? grades[doc] : null;
  }

  function documentOf(doc) {
    var corpus = DATA.corpora[space().corpus];
    if (!corpus) return undefined;
    return own(corpus.docs, doc) ? corpus.docs[doc] : null;
  }

  function docItem(entry, topic, otherRanker, otherRole) {
    var grade = gradeOf(topic, entry.doc);
    var gradeClass = grade === null ? "unjudged" : "g" + Math.max(0, Math.min(grade, 3));
    var other = otherRank(otherRanker, topic, entry.doc);
    var moved;
    if (otherRanker === null) moved = "";
    else if (other === 0) moved = "not ranked by the " + otherRole;
    else if (other === entry.rank) moved = "same rank in the " + otherRole;
    else moved = otherRole + " rank " + other + (other < entry.rank ? " ▲" : " ▼");
    var item = el("li", { className: "doc " + gradeClass, "data-doc": entry.doc }, [
      el("div", { className: "doc-head" }, [
        el("span", { className: "rank", text: String(entry.rank) }),
        el("span", { className: "grade", text: grade === null ? "unjudged" : "grade " + grade }),
        el("span", { className: "docid", text: entry.doc }),
        el("span", { className: "moved", text: moved })
      ])
    ]);
    var record = documentOf(entry.doc);
    if (record === undefined) {
      item.append(el("p", { className: "no-text", text: "no corpus in this page" }));
    } else if (record === null) {
      item.append(el("p", { className: "no-text", text: "not in the corpus (" +
        DATA.corpora[space().corpus].path + "): no text" }));
    } else {
      var title = el("div", { className: "doc-title" });
      renderText(title, record[0]);
      var details = el("details", { className: "doc-text" }, [
        el("summary", { text: "text (" + (record[2].length + record[3]).toLocaleString("en") +
          " characters" + (record[3] ? ", first " + record[2].length.toLocaleString("en") +
          " shown" : "") + ")" })
      ]);
      details.addEventListener("toggle", function () {
        if (details.open && !details.querySelector(".text")) {
          var body = el("div", { className: "text" });
          renderText(body, record[2]);
          var cut = cutNote(record[3]);
          if (cut) body.append(cut);
          details.append(body);
        }
        drawLines();
      });
      item.append(title, details);
    }
    return item;
  }

  function selectTopic(topic) {
    state.topic = topic;
    parts.chart.querySelectorAll("rect.bar").forEach(function (bar) {
      bar.classList.toggle("selected", bar.getAttribute("data-topic") === topic);
    });
    renderTopic(compared());
    writeHash();
  }

  function renderTopic(data) {
    var box = parts.topic;
    box.textContent = "";
    var topic = state.topic;
    if (topic === null || state.system === null || state.baseline === null) return;
    var info = space().topics[topic];
    var heading = el("h2", { id: "topic-heading" }, [el("span", { className: "topic-id",
      text: topic })]);
    if (info && info[0]) {
      heading.append(" · ", renderText(el("span", { className: "topic-title" }), info[0]));
    }
    box.append(heading);
    var labels = space().labels;
    if (labels) {
      var values = labels.values[topic];
      box.append(el("p", { className: "labels", text: values
        ? labels.columns.map(function (c, i) { return c + ": " + values[i]; }).join(" · ")
        : "no row for this topic in " + labels.file }));
    }
    var a = own(data.a, topic) ? data.a[topic] : null;
    var b = own(data.b, topic) ? data.b[topic] : null;
    var scores = el("p", { className: "topic-scores" }, [measure().key + ": ",
      el("strong", { text: label(state.system) }), " " + (a === null ? "no score" : plain(a)),
      " · ", el("strong", { text: label(state.baseline) }), " " +
      (b === null ? "no score" : plain(b)),
      a !== null && b !== null ? " · Δ " + signed(a - b) : ""]);
    box.append(scores);
    [state.system, state.baseline].forEach(function (index) {
      var ranker = rankerOf(index, topic);
      var about = ranker === null ? null : space().rankers[ranker];
      if (about && about.alpha !== undefined) {
        box.append(el("p", { className: "alpha", text: label(index) + ": linear fusion with " +
          "alpha = " + about.alpha + ", the weight chosen on the other folds for " +
          measure().column + " (cross-validation)." }));
      }
    });
    var query = el("div", { id: "query", className: "query" });
    if (info) {
      renderText(query, info[2]);
      var cut = cutNote(info[3]);
      if (cut) query.append(cut);
    } else {
      query.append(el("p", { className: "no-text", text: "no text for this topic in " +
        (space().topics_file || "the topics") }));
    }
    box.append(query);
    var judged = view().judged[topic] || {};
    var grades = Object.keys(judged).sort(function (x, y) { return Number(y) - Number(x); });
    box.append(el("p", { className: "judged", text: grades.length
      ? "The qrels (" + view().qrels_file + ") judge " + grades.reduce(function (s, g) {
        return s + judged[g]; }, 0) + " document(s) for this topic: " + grades.map(function (g) {
        return judged[g] + " of grade " + g; }).join(", ") + "."
      : "The qrels (" + view().qrels_file + ") judge no document for this topic." }));

    var rankers = [rankerOf(state.system, topic), rankerOf(state.baseline, topic)];
    var names = [label(state.system), label(state.baseline)];
    var lists = [0, 1].map(function (side) {
      var list = topList(rankers[side], topic);
      var column = el("div", { className: "ranking " + (side === 0 ? "left" : "right") }, [
        el("h3", { text: names[side] + ", top " + DATA.settings.top_k })
      ]);
      if (!list.length) {
        column.append(el("p", { className: "no-ranking", text: names[side] +
          " ranks no document for this topic (no run lines for it" +
          (rankers[side] === null ? ", or no ranking for this measure" : "") + ")." }));
        return column;
      }
      var items = el("ol", {});
      list.forEach(function (entry) {
        items.append(docItem(entry, topic, rankers[1 - side], side === 0 ? "baseline" : "system"));
      });
      column.append(items);
      return column;
    });
    parts.gutter = svgEl("svg", { "class": "gutter", "aria-hidden": "true" });
    box.append(el("div", { className: "rankings" }, [lists[0], parts.gutter, lists[1]]));
    drawLines();
  }

  // Lines from each document in one list to the same document in the other; a document in one
  // list only gets a stub.
  function drawLines() {
    var gutter = parts.gutter;
    if (!gutter || !gutter.isConnected) return;
    gutter.textContent = "";
    var box = gutter.getBoundingClientRect();
    var width = box.width;
    gutter.setAttribute("viewBox", "0 0 " + width + " " + box.height);
    var wrap = gutter.parentNode;
    function heads(side) {
      var found = {};
      wrap.querySelectorAll(".ranking." + side + " li.doc").forEach(function (item) {
        var head = item.querySelector(".doc-head").getBoundingClientRect();
        found[item.getAttribute("data-doc")] = { y: head.top + head.height / 2 - box.top,
          kind: item.className.replace("doc ", "") };
      });
      return found;
    }
    var left = heads("left");
    var right = heads("right");
    Object.keys(left).forEach(function (doc) {
      var from = left[doc];
      if (own(right, doc)) {
        var to = right[doc];
        gutter.append(svgEl("path", { d: "M0," + from.y.toFixed(1) + " C" + (width / 2) + "," +
          from.y.toFixed(1) + " " + (width / 2) + "," + to.y.toFixed(1) + " " + width + "," +
          to.y.toFixed(1), "class": "link " + from.kind, "data-doc": doc }));
      } else {
        gutter.append(svgEl("path", { d: "M0," + from.y.toFixed(1) + " h" + (width / 3),
          "class": "stub " + from.kind, "data-doc": doc }));
      }
    });
    Object.keys(right).forEach(function (doc) {
      if (own(left, doc)) return;
      var to = right[doc];
      gutter.append(svgEl("path", { d: "M" + width + "," + to.y.toFixed(1) + " h" +
        (-width / 3), "class": "stub " + to.kind, "data-doc": doc }));
    });
  }

  // --- keys ----------------------------------------------------------------------------------
  function stepTopic(by) {
    if (!order.length) return;
    var at = order.indexOf(state.topic);
    var next = at < 0 ? 0 : Math.max(0, Math.min(order.length - 1, at + by));
    selectTopic(order[next]);
    var bar = parts.chart.querySelector("rect.bar.selected");
    if (bar && document.activeElement && document.activeElement.tagName === "rect") bar.focus();
  }

  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    var tag = (event.target && event.target.tagName || "").toLowerCase();
    if (tag === "select" || tag === "input" || tag === "textarea") return;
    switch (event.key) {
      case "ArrowRight": case "j": stepTopic(1); break;
      case "ArrowLeft": case "k": stepTopic(-1); break;
      case "Home": stepTopic(-order.length); break;
      case "End": stepTopic(order.length); break;
      case "s": swap(); break;
      case "m": state.measure = (state.measure + 1) % measures.length; update(); break;
      case "M": state.measure = (state.measure + measures.length - 1) % measures.length; update();
        break;
      default: return;
    }
    event.preventDefault();
  });

  window.addEventListener("hashchange", function () {
    if (location.hash === lastHash) return;
    readHash();
    update();
  });
  window.addEventListener("resize", drawLines);

  function firstMeasure() {
    for (var m = 0; m < measures.length; m += 1) {
      var byMeasure = DATA.scores[measures[m].key] || {};
      if (own(byMeasure, String(state.system)) && own(byMeasure, String(state.baseline))) return m;
    }
    return 0;
  }

  build();
  if (state.system !== null && state.baseline !== null) state.measure = firstMeasure();
  readHash();
  if (!measures.length) {
    parts.summary.textContent = "No measure has per-topic scores for two systems.";
  } else {
    update();
  }
  document.body.setAttribute("data-ready", "true");
})();
"""
