// mpiadvise report --format html: the page's script (inlined into the file after Chart.js).
// It presents the report's JSON (the element #report-data) and computes no figure of its own: every
// number drawn or printed is one of the JSON's, converted to a unit. Text from the job (paths, symbol
// names, source lines) goes into the page as text nodes only, never as markup.
"use strict";
(function () {
  const report = JSON.parse(document.getElementById("report-data").textContent);
  window.mpaReport = report;
  window.mpaCharts = {};

  // ---- text -------------------------------------------------------------------------------------------
  // A string of the job in the report's lossless form (mpiadvise-log(5), STRINGS): U+0000 then the bytes
  // with %HH escapes. Shown with the bytes that are not printable written \xHH.
  function shown(s) {
    if (typeof s !== "string") return String(s);
    if (s.charCodeAt(0) === 0) {
      s = s.slice(1).replace(/%([0-9A-Fa-f]{2})/g, function (_, h) {
        const c = parseInt(h, 16);
        return c >= 0x20 && c < 0x7f ? String.fromCharCode(c) : "\\x" + h.toLowerCase();
      });
    }
    return s.replace(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g, function (c) {
      return "\\u{" + c.charCodeAt(0).toString(16) + "}";
    });
  }
  function el(tag, attrs, children) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    for (const c of children || []) e.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    return e;
  }
  function text(tag, s, cls) { return el(tag, cls ? { class: cls } : {}, [shown(s)]); }
  function dur(ns) {
    const a = Math.abs(ns);
    if (a >= 1e9) return (ns / 1e9).toFixed(3) + " s";
    if (a >= 1e6) return (ns / 1e6).toFixed(2) + " ms";
    if (a >= 1e3) return (ns / 1e3).toFixed(1) + " us";
    return ns.toFixed(0) + " ns";
  }
  function bytes(b) {
    if (b === "inf") return "infinite";
    const u = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0, v = b;
    while (v >= 1024 && i < u.length - 1 && v % 1024 === 0) v /= 1024, i++;
    return v + " " + u[i];
  }
  function pct(f) { return (100 * f).toFixed(1) + "%"; }
  function signedPct(f) { return (f >= 0 ? "+" : "") + pct(f); }
  const main = document.getElementById("main");
  function section(title, id) {
    const s = el("section", { id: id });
    s.appendChild(text("h2", title));
    main.appendChild(s);
    return s;
  }
  function canvas(parent, id, tall) {
    const c = el("canvas", { id: id });
    parent.appendChild(el("div", { class: tall ? "chart tall" : "chart" }, [c]));
    return c;
  }
  function table(parent, head, rows, numeric) {
    const t = el("table");
    t.appendChild(el("tr", {}, head.map(function (h, i) { return el("th", numeric && numeric[i] ? { class: "num" } : {}, [h]); })));
    for (const r of rows)
      t.appendChild(el("tr", {}, r.map(function (c, i) {
        const cell = el("td", numeric && numeric[i] ? { class: "num" } : {});
        cell.appendChild(typeof c === "string" ? document.createTextNode(shown(c)) : c);
        return cell;
      })));
    parent.appendChild(t);
    return t;
  }
  Chart.defaults.animation = false;
  Chart.defaults.maintainAspectRatio = false;
  Chart.defaults.font.size = 12;
  const colours = {
    computation: "#8fa7c8", overheads: "#f2b134", "send-wait": "#d1495b", "receive-wait": "#8d5a97",
    collectives: "#2e9e83", eager: "#4f86c6", rendezvous: "#d1495b",
    send: "#4f86c6", receive: "#8d5a97", "send-receive": "#5e60ce", wait: "#d1495b", collective: "#2e9e83", other: "#a0a7b4"
  };

  // ---- the job ------------------------------------------------------------------------------------------
  const s = report.summary, m = report.model, p = report.params;
  document.getElementById("dir").textContent = shown(report.dir);
  {
    const sec = section("The job", "job");
    const lib = s.library ? s.library + (s.library_version ? " " + s.library_version : "") : "an unknown MPI library";
    const eager = s.effective_S === null ? "not in the log (the model's S is the parameter set's)"
      : s.eager_setting + " = " + (s.configured_setting === null ? "?" : s.configured_setting) + ": S = " + s.effective_S +
        " bytes (" + s.effective_S_note + ")";
    const fit = m.fit.explained
      ? el("span", { class: "good" }, ["explains the run: " + signedPct(m.error) + " against the measured time, within " + pct(m.fit.expected_error)])
      : el("span", { class: "bad" }, ["does not explain the run: " + signedPct(m.error) + " against the measured time, beyond the " +
          pct(m.fit.expected_error) + " it is expected to reach; every saving below is uncertain"]);
    const t = table(sec, ["", ""], [
      ["MPI library", lib], ["transport", s.transport], ["ranks", String(s.ranks) + " (" + s.ranks_logged + " logged)"],
      ["hosts", s.hosts.join(", ")], ["eager limit", eager], ["traced", dur(s.traced_ns) + ", " + pct(s.mpi_share) + " of the ranks' time inside MPI"],
      ["messages, collectives", s.messages + " messages, " + s.collectives + " collectives"],
      ["parameter set", p.why || p.name], ["predicted", dur(m.predicted_ns) + " against the measured " + dur(m.measured_ns)], ["the model", fit]
    ]);
    t.classList.add("facts");
    t.querySelector("tr").remove();
    if (!m.fit.explained)
      for (const sus of m.fit.suspects || []) sec.appendChild(text("p", "suspected: " + sus.detail, "note"));
  }

  // ---- per rank, measured and predicted, by cause ---------------------------------------------------------
  {
    const sec = section("Time per rank, measured and predicted, by cause", "ranks");
    const parts = [["computation", "computation_ns", "computation_ns"], ["overheads", "other_mpi_ns", "other_mpi_ns"],
                   ["send-wait", "send_wait_ns", "send_wait_ns"], ["receive-wait", "recv_wait_ns", "recv_wait_ns"],
                   ["collectives", "collectives_ns", "collectives_ns"]];
    const datasets = [];
    for (const side of ["measured", "predicted"])
      for (const [name, mk, pk] of parts)
        datasets.push({
          label: name + " (" + side + ")", stack: side, backgroundColor: colours[name],
          borderColor: side === "predicted" ? "#1d2330" : colours[name], borderWidth: side === "predicted" ? 1 : 0,
          data: report.ranks.map(function (r) { const v = r[side][side === "measured" ? mk : pk]; return (v || 0) / 1e6; })
        });
    window.mpaCharts.ranks = new Chart(canvas(sec, "chart-ranks"), {
      type: "bar",
      data: { labels: report.ranks.map(function (r) { return "rank " + r.rank; }), datasets: datasets },
      options: {
        scales: { x: { stacked: true }, y: { stacked: true, title: { display: true, text: "ms (left bar measured, right bar predicted)" } } },
        plugins: { legend: { labels: { filter: function (i) { return i.text.endsWith("(measured)"); } } } }
      }
    });
  }

  // a dashed vertical line at each of marks ({x, label}, or {pixel: function (chart), label}) of a chart's x
  // axis (kept out of the chart's options, where Chart.js would call a function as a scriptable option)
  const marksPlugin = function (marks) {
    return {
    id: "mpaMarks",
    afterDatasetsDraw: function (chart) {
      const ctx = chart.ctx, area = chart.chartArea, x = chart.scales.x;
      ctx.save();
      for (const mk of marks) {
        const px = typeof mk.pixel === "function" ? mk.pixel(chart) : x.getPixelForValue(mk.x);
        if (!(px >= area.left && px <= area.right)) continue;
        ctx.strokeStyle = mk.colour || "#1d2330";
        ctx.setLineDash([5, 4]);
        ctx.beginPath(); ctx.moveTo(px, area.top); ctx.lineTo(px, area.bottom); ctx.stroke();
        ctx.setLineDash([]);
        ctx.fillStyle = mk.colour || "#1d2330";
        const w = ctx.measureText(mk.label).width;  // the label left of the line where it would leave the chart
        ctx.fillText(mk.label, px + 4 + w > area.right ? px - 4 - w : px + 4, area.top + 12);
      }
      ctx.restore();
    }
    };
  };

  // ---- predicted run time against S -------------------------------------------------------------------------
  const charts = report.charts;
  if (charts) {
    const sw = charts.s_sweep;
    const sec = section("Predicted run time against the eager limit S", "sweep");
    const pts = sw.points.map(function (q) { return { x: q.S, y: q.predicted_ns / 1e6 }; });
    const at = function (S) { return sw.points.find(function (q) { return q.S === S; }); };
    const datasets = [{ label: "predicted run time", data: pts, borderColor: "#3a6fd8", backgroundColor: "#3a6fd8", showLine: true, pointRadius: 3 }];
    const marks = [];
    for (const [key, label, colour] of [["current_S", "current S", "#1d2330"], ["advised_S", "advised S", "#1c7c3a"], ["considered_S", "considered S", "#a0a7b4"]]) {
      const q = typeof sw[key] === "number" ? at(sw[key]) : undefined;
      if (!q) continue;
      datasets.push({ label: label + " = " + q.S + " B", data: [{ x: q.S, y: q.predicted_ns / 1e6 }], borderColor: colour, backgroundColor: colour,
                      pointRadius: 7, pointStyle: "rectRot", showLine: false });
      marks.push({ x: q.S, label: label, colour: colour });
    }
    window.mpaCharts.sweep = new Chart(canvas(sec, "chart-sweep"), {
      type: "scatter", data: { datasets: datasets }, plugins: [marksPlugin(marks)],
      options: {
        scales: { x: { type: "logarithmic", title: { display: true, text: "S (bytes)" } }, y: { title: { display: true, text: "predicted run time (ms)" } } }
      }
    });

    // ---- messages by size and protocol
    const ms = charts.message_sizes;
    const sec2 = section("Messages by size and protocol (S = " + bytes(ms.S) + ")", "sizes");
    const label = function (b) { return b.log2 < 0 ? "0 B" : bytes(b.min_bytes) + "-" + bytes(b.max_bytes + 1); };
    const sMark = ms.S === "inf" ? [] : [{
      label: "S", colour: "#1d2330",
      // S within its bin, on the bins' axis: between the bin's start and the next one's
      pixel: function (chart) {
        const i = ms.bins.findIndex(function (b) { return b.log2 >= 0 && b.min_bytes <= ms.S && ms.S <= b.max_bytes; });
        const x = chart.scales.x;
        if (i < 0) return NaN;
        const b = ms.bins[i], frac = Math.log2(ms.S / b.min_bytes);
        const w = (x.getPixelForValue(1) - x.getPixelForValue(0)) || x.width;
        return x.getPixelForValue(i) - w / 2 + frac * w;
      }
    }];
    window.mpaCharts.sizes = new Chart(canvas(sec2, "chart-sizes"), {
      type: "bar", plugins: [marksPlugin(sMark)],
      data: {
        labels: ms.bins.map(label),
        datasets: [
          { label: "eager (at most S)", backgroundColor: colours.eager, data: ms.bins.map(function (b) { return b.eager_messages; }) },
          { label: "rendezvous (above S, or synchronous)", backgroundColor: colours.rendezvous, data: ms.bins.map(function (b) { return b.rendezvous_messages; }) }
        ]
      },
      options: {
        scales: { x: { stacked: true, title: { display: true, text: "message size" } }, y: { stacked: true, title: { display: true, text: "messages" } } }
      }
    });
  }

  // ---- hot spots -----------------------------------------------------------------------------------------------
  {
    const sec = section("Hot spots, by time lost waiting (measured)", "hot-spots");
    if (!report.hot_spots.length) sec.appendChild(text("p", "none", "note"));
    else table(sec, ["#", "where", "call", "lost", "share", "waits", "cause"], report.hot_spots.map(function (h, i) {
      const where = el("div", {}, [text("span", h.where.text, "code")]);
      if (h.where.source) where.appendChild(el("div", {}, [text("code", h.where.source, "src")]));
      return [String(i + 1), where, h.call, dur(h.waited_ns), pct(h.share_of_waiting), String(h.count), h.cause];
    }), [true, false, false, true, true, true, false]);
  }

  // ---- advice ------------------------------------------------------------------------------------------------
  {
    const sec = section("Advice, by predicted run time (each from a what-if replay)", "advice");
    if (!report.advice.length) sec.appendChild(text("p", "none", "note"));
    const describe = function (a, box) {
      box.appendChild(text("div", a.title, "title"));
      box.appendChild(text("div", "predicted run time " + dur(a.predicted_ns) + " instead of " + dur(a.baseline_ns) + ": saves " +
                                  dur(a.saving_ns) + " (" + pct(a.saving) + "); the model's error on this run is " + pct(a.model_error)));
      if (a.uncertain) box.appendChild(text("div", "uncertain: the model does not explain the run as measured", "bad"));
      if (a.kind === "raise_eager_limit") {
        const how = [a.mca, a.env ? "export " + a.env : ""].filter(Boolean).join(" or ");
        if (how) box.appendChild(el("div", {}, ["set it: ", text("code", how)]));
        box.appendChild(text("div", "memory: up to " + bytes(a.memory_per_rank_bytes) + " of eager buffering per receiving rank"));
        if (a.caution) box.appendChild(text("div", "caution: " + a.caution));
      } else if (a.where) box.appendChild(el("div", {}, ["at ", text("code", a.where.text)]));
    };
    for (const a of report.advice) { const box = el("div", { class: "advice" }); describe(a, box); sec.appendChild(box); }
    if (report.considered && report.considered.length) {
      sec.appendChild(text("p", "Considered, not advised (a predicted saving below the model's error or 1%):", "note"));
      table(sec, ["change", "predicted run time", "against the run as traced"], report.considered.map(function (a) {
        return [a.title, dur(a.predicted_ns), signedPct(-a.saving)];
      }), [false, true, true]);
    }
  }

  // ---- a window of the run: measured above predicted, messages as arrows ------------------------------------
  if (charts && charts.timeline.calls.length) {
    const tl = charts.timeline;
    const sec = section("A window of the run, measured and predicted (" + tl.calls.length + " calls of " + tl.ranks_shown + " of " +
                        tl.ranks + " ranks" + (tl.truncated ? ", from the start" : "") + ")", "timeline");
    const rows = [];
    for (let r = 0; r < tl.ranks_shown; r++) rows.push("rank " + r + " measured", "rank " + r + " predicted");
    const classes = ["send", "receive", "send-receive", "wait", "collective", "other"];
    const datasets = classes.map(function (c) {
      const data = [];
      tl.calls.forEach(function (k, i) {
        if (k.class !== c) return;
        data.push({ x: [k.measured_ns[0] / 1e3, k.measured_ns[1] / 1e3], y: "rank " + k.rank + " measured", call: i });
        data.push({ x: [k.predicted_ns[0] / 1e3, k.predicted_ns[1] / 1e3], y: "rank " + k.rank + " predicted", call: i });
      });
      return { label: c, data: data, backgroundColor: colours[c], borderColor: colours[c], borderWidth: 1, minBarLength: 2,
               barPercentage: 0.9, categoryPercentage: 0.9 };
    }).filter(function (d) { return d.data.length; });
    const arrows = {
      id: "mpaArrows",
      afterDatasetsDraw: function (chart) {
        const x = chart.scales.x, y = chart.scales.y, area = chart.chartArea, ctx = chart.ctx;
        ctx.save();
        ctx.beginPath(); ctx.rect(area.left, area.top, area.right - area.left, area.bottom - area.top); ctx.clip();
        ctx.strokeStyle = "rgba(29,35,48,0.55)";
        ctx.fillStyle = "rgba(29,35,48,0.55)";
        for (const msg of tl.messages) {
          const a = tl.calls[msg.from], b = tl.calls[msg.to];
          for (const side of ["measured", "predicted"]) {
            const x0 = x.getPixelForValue(a[side + "_ns"][0] / 1e3), x1 = x.getPixelForValue(b[side + "_ns"][1] / 1e3);
            const y0 = y.getPixelForValue("rank " + a.rank + " " + side), y1 = y.getPixelForValue("rank " + b.rank + " " + side);
            ctx.beginPath(); ctx.moveTo(x0, y0); ctx.lineTo(x1, y1); ctx.stroke();
            const ang = Math.atan2(y1 - y0, x1 - x0);
            ctx.beginPath(); ctx.moveTo(x1, y1);
            ctx.lineTo(x1 - 7 * Math.cos(ang - 0.4), y1 - 7 * Math.sin(ang - 0.4));
            ctx.lineTo(x1 - 7 * Math.cos(ang + 0.4), y1 - 7 * Math.sin(ang + 0.4));
            ctx.fill();
          }
        }
        ctx.restore();
      }
    };
    const controls = el("div", { class: "controls" });
    sec.appendChild(controls);
    const chart = new Chart(canvas(sec, "chart-timeline", true), {
      type: "bar", data: { labels: rows, datasets: datasets }, plugins: [arrows],
      options: {
        indexAxis: "y",
        scales: { x: { type: "linear", min: 0, max: tl.end_ns / 1e3, title: { display: true, text: "us from the first call shown" } },
                  y: { stacked: true } },
        plugins: {
          tooltip: { callbacks: { label: function (c) {
            const k = tl.calls[c.raw.call];
            return shown(k.call + " at " + tl.sites[k.site] + ": " + ((c.raw.x[1] - c.raw.x[0])).toFixed(1) + " us");
          } } }
        }
      }
    });
    window.mpaCharts.timeline = chart;
    // zoom: the mouse wheel over the chart, or the buttons; the whole window again with reset
    const zoom = function (factor, centre) {
      const sx = chart.scales.x, lo = chart.options.scales.x.min, hi = chart.options.scales.x.max;
      const c = centre === undefined ? (lo + hi) / 2 : centre;
      const nlo = Math.max(0, c - (c - lo) * factor), nhi = Math.min(tl.end_ns / 1e3, c + (hi - c) * factor);
      if (nhi - nlo < 1e-3 || !(sx)) return;
      chart.options.scales.x.min = nlo; chart.options.scales.x.max = nhi; chart.update("none");
    };
    const button = function (label, f) { const b = el("button", { type: "button" }, [label]); b.addEventListener("click", f); controls.appendChild(b); };
    button("zoom in", function () { zoom(0.5); });
    button("zoom out", function () { zoom(2); });
    button("reset", function () { chart.options.scales.x.min = 0; chart.options.scales.x.max = tl.end_ns / 1e3; chart.update("none"); });
    controls.appendChild(text("span", "or turn the mouse wheel over the chart", "note"));
    chart.canvas.addEventListener("wheel", function (e) {
      e.preventDefault();
      zoom(e.deltaY < 0 ? 0.8 : 1.25, chart.scales.x.getValueForPixel(e.offsetX));
    }, { passive: false });
  }

  // ---- notes
  {
    const notes = (report.notes || []).concat((report.problems || []).map(function (q) { return "problem: " + q; }));
    if (notes.length) {
      const sec = section("Notes", "notes");
      const ul = el("ul");
      for (const n of notes) ul.appendChild(text("li", n));
      sec.appendChild(ul);
    }
  }
  window.mpaReady = true;
})();
