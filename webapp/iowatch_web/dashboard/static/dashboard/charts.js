/* The dashboard's charts: each <canvas data-chart="KIND" data-src="URL"> fetches
   its numbers from a /dashboard/api/ endpoint and draws them with Chart.js.
   Data from the store is untrusted text: it reaches the page only through
   textContent and Chart.js labels (drawn on the canvas), never as HTML.
   A drawn canvas gets data-drawn="1" (the browser tests wait for it). */
(function () {
  "use strict";

  const COLORS = {base: "#7f8fa6", candidate: "#2f6db5", regression: "#c0392b",
                  improvement: "#27874a", median: "#e67e22", point: "rgba(47,109,181,0.55)",
                  published: "#8e44ad", measured: "#2f6db5"};
  // Bars start at zero on a linear axis; one shorter than this many pixels is drawn this long.
  const MIN_BAR = 3;

  // Error bars: dataset.errorBars[i] = [low, high] in the value axis' units,
  // along the bars of a vertical or a horizontal (indexAxis "y") bar chart;
  // clipped to the chart area, so a bar never draws over the legend or an axis.
  const errorBarsPlugin = {
    id: "iowatchErrorBars",
    afterDatasetsDraw(chart) {
      const ctx = chart.ctx, area = chart.chartArea;
      const horizontal = chart.options.indexAxis === "y";
      chart.data.datasets.forEach((dataset, d) => {
        const meta = chart.getDatasetMeta(d);
        if (!dataset.errorBars || meta.hidden) return;
        const scale = chart.scales[horizontal ? meta.xAxisID : meta.yAxisID];
        ctx.save();
        ctx.beginPath();
        ctx.rect(area.left, area.top, area.right - area.left, area.bottom - area.top);
        ctx.clip();
        ctx.strokeStyle = "#222";
        ctx.lineWidth = 1.5;
        meta.data.forEach((bar, i) => {
          const range = dataset.errorBars[i];
          if (!range || range[0] == null || range[1] == null) return;
          const lo = scale.getPixelForValue(range[0]), hi = scale.getPixelForValue(range[1]);
          const half = Math.min(6, ((horizontal ? bar.height : bar.width) || 12) / 4);
          const at = horizontal ? bar.y : bar.x;
          // (along, across) -> canvas point, for either orientation.
          const point = (along, across) => horizontal ? [along, across] : [across, along];
          ctx.beginPath();
          ctx.moveTo(...point(lo, at)); ctx.lineTo(...point(hi, at));
          ctx.moveTo(...point(lo, at - half)); ctx.lineTo(...point(lo, at + half));
          ctx.moveTo(...point(hi, at - half)); ctx.lineTo(...point(hi, at + half));
          ctx.stroke();
        });
        ctx.restore();
      });
    },
  };

  // Change points: options.plugins.iowatchChangePoints.at = [x index, ...], and
  // .labels = [text, ...] written beside each mark (the step's size). The canvas
  // names the marks it drew in data-change-points (the browser tests read it).
  const changePointsPlugin = {
    id: "iowatchChangePoints",
    afterDatasetsDraw(chart, args, options) {
      const at = (options && options.at) || [];
      if (!at.length) return;
      const x = chart.scales.x, area = chart.chartArea, ctx = chart.ctx;
      ctx.save();
      ctx.strokeStyle = COLORS.regression;
      ctx.fillStyle = COLORS.regression;
      ctx.lineWidth = 2;
      ctx.font = "bold 12px system-ui, sans-serif";
      at.forEach((index, i) => {
        // Between the last kernel before the step and the first after it.
        const px = (x.getPixelForValue(index - 1) + x.getPixelForValue(index)) / 2;
        ctx.setLineDash([6, 4]);
        ctx.beginPath(); ctx.moveTo(px, area.top); ctx.lineTo(px, area.bottom); ctx.stroke();
        const text = (options.labels || [])[i];
        if (text) {
          // Inside the chart area, on whichever side of the line has room.
          const right = px + 4 + ctx.measureText(text).width < area.right;
          ctx.textAlign = right ? "left" : "right";
          ctx.fillText(text, right ? px + 4 : px - 4, area.top + 14);
        }
      });
      chart.canvas.dataset.changePoints = at.join(",");
      ctx.restore();
    },
  };

  // A regression's two kernels: options.plugins.iowatchMarks.marks = [{x, role, kernel}],
  // a solid line through each kernel, named "good" or "bad" at the bottom of the area.
  // The canvas names them in data-marks ("good:3,bad:4"; the tests read it).
  const marksPlugin = {
    id: "iowatchMarks",
    afterDatasetsDraw(chart, args, options) {
      const marks = (options && options.marks) || [];
      if (!marks.length) return;
      const x = chart.scales.x, area = chart.chartArea, ctx = chart.ctx;
      ctx.save();
      ctx.lineWidth = 2;
      ctx.font = "bold 12px system-ui, sans-serif";
      marks.forEach((m) => {
        const px = x.getPixelForValue(m.x);
        ctx.strokeStyle = ctx.fillStyle = m.role === "bad" ? COLORS.regression : COLORS.improvement;
        ctx.beginPath(); ctx.moveTo(px, area.top); ctx.lineTo(px, area.bottom); ctx.stroke();
        const right = px + 4 + ctx.measureText(m.role).width < area.right;
        ctx.textAlign = right ? "left" : "right";
        ctx.fillText(m.role, right ? px + 4 : px - 4, area.bottom - 6);
      });
      chart.canvas.dataset.marks = marks.map((m) => `${m.role}:${m.x}`).join(",");
      ctx.restore();
    },
  };

  Chart.register(errorBarsPlugin, changePointsPlugin, marksPlugin);
  Chart.defaults.animation = false;
  Chart.defaults.maintainAspectRatio = false;

  function drawn(canvas) { canvas.dataset.drawn = "1"; }

  function note(canvas, text, failed) {
    canvas.dataset.drawn = failed ? "error" : "empty";
    const p = document.createElement("p");
    p.className = "hint";
    p.textContent = text;
    canvas.parentNode.appendChild(p);
  }

  // Compare: one chart per study and job group (the canvas names them), each
  // deciding cell a row of horizontal bars (the sides' means, in the metric's
  // unit) named shortly, with the full name in the tooltip. The axis is linear
  // from zero, as a bar's length is its value (on a log axis it means nothing,
  // issue 28); a bar too short to see keeps MIN_BAR pixels, its number in the tooltip.
  function cellName(c) {
    return [c.study, c.device_class, c.device, c.filesystem, c.group, c.metric].filter(Boolean).join(" / ");
  }

  function number(v) {
    return Math.abs(v) >= 1000 ? Math.round(v).toLocaleString("en-US") : String(Number(v.toPrecision(3)));
  }

  function drawCompare(canvas, data) {
    const mine = canvas.dataset;
    const cells = data.cells.filter((c) => c.study === mine.study && c.group === mine.group
                                          && c.unit === mine.unit && c.base.mean != null);
    if (!cells.length) { note(canvas, "No cells to chart."); return; }
    const metrics = new Set(cells.map((c) => c.metric));
    // Short row names: what differs between the rows (the metric only when there are several).
    const label = (c) => [metrics.size > 1 ? c.metric : null, c.device_class, c.device, c.filesystem]
      .filter(Boolean).join(" ");
    // In the unit the table shows (the page says how many of the metric's make one).
    const per = Number(mine.per) || 1;
    const base = [], candidate = [], baseErr = [], candErr = [], colors = [];
    cells.forEach((c) => {
      const b = c.base.mean / per, sem = (c.base.sd != null && c.base.n > 1) ? 1.96 * c.base.sd / per / Math.sqrt(c.base.n) : null;
      base.push(b);
      baseErr.push(sem != null ? [b - sem, b + sem] : null);
      candidate.push(c.candidate.mean / per);
      // The change's interval, carried onto the base mean: where the candidate's mean may lie.
      candErr.push(c.ci_low == null || c.size_only ? null : [b * (1 + c.ci_low / 100), b * (1 + c.ci_high / 100)]);
      colors.push(COLORS[c.outcome] || COLORS.candidate);
    });
    const means = base.concat(candidate).filter((v) => v != null);
    const most = Math.max(...means, ...baseErr.concat(candErr).filter(Boolean).map((r) => r[1]));
    canvas.dataset.scale = "linear";
    canvas.parentNode.style.height = (90 + 46 * cells.length) + "px";
    const unit = mine.shownUnit ? ` ${mine.shownUnit}` : "";
    canvas.chart = new Chart(canvas, {
      type: "bar",
      data: {
        labels: cells.map(label),
        datasets: [
          {label: "base", data: base, backgroundColor: COLORS.base, errorBars: baseErr, minBarLength: MIN_BAR},
          {label: "candidate", data: candidate, backgroundColor: colors, errorBars: candErr, minBarLength: MIN_BAR},
        ],
      },
      options: {
        indexAxis: "y",
        layout: {padding: {right: 12}},
        scales: {
          x: {beginAtZero: true, suggestedMax: most * 1.05, title: {display: true, text: `mean${unit}`},
              ticks: {maxRotation: 0, callback: (v) => number(v)}},
          y: {ticks: {autoSkip: false}},
        },
        plugins: {
          legend: {position: "bottom"},
          tooltip: {callbacks: {
            title: (items) => items.length ? cellName(cells[items[0].dataIndex]) : "",
            label: (item) => {
              const c = cells[item.dataIndex], side = item.datasetIndex === 0 ? c.base : c.candidate;
              return `${item.datasetIndex === 0 ? "base" : "candidate"}: mean ${number(side.mean / per)}${unit} (n=${side.n})`;
            },
            afterBody: (items) => {
              const c = items.length && cells[items[0].dataIndex];
              if (!c || c.change_pct == null) return "";
              const ci = c.ci_low == null || c.size_only ? "size only" : `95% CI ${c.ci_low.toFixed(1)}% … ${c.ci_high.toFixed(1)}%`;
              return `change ${c.change_pct.toFixed(1)}% (${ci}): ${c.label}`;
            }}}},
      },
    });
    drawn(canvas);
  }

  // History: the x axis names each kernel shortly (its commit and patch index,
  // and its release unless every kernel shares it, as the axis title then says)
  // with its patch subject under it when it is a series' patch; the full names
  // are in the tooltip.
  function clip(text, most) {
    return text.length > most ? text.slice(0, most - 1) + "…" : text;
  }

  function signed(pct) {
    return (pct > 0 ? "+" : "") + pct.toFixed(1) + "%";
  }

  const LINE_COLORS = [COLORS.median, "#2f6db5", "#27874a", "#8e44ad", "#7f8fa6", "#b5762f"];

  function drawHistory(canvas, data) {
    if (!data.points.length) { note(canvas, "No samples for this series key."); return; }
    const labels = data.kernels.map((k) => k.label);
    const release = data.kernels.every((k) => k.release === data.kernels[0].release) ? data.kernels[0].release : null;
    const names = data.kernels.map((k) => [release ? null : k.release, release ? k.commit : (k.commit || "").slice(0, 7),
                                           k.patch_index == null ? null : `[${k.patch_index}]`].filter(Boolean).join(" "));
    const ticks = data.kernels.map((k, i) => k.subject ? [names[i], clip(k.subject, 28)] : names[i]);
    const subjects = data.kernels.some((k) => k.subject);
    const lines = data.lines || [];
    const chart = new Chart(canvas, {
      type: "line",
      data: {
        labels: labels,
        datasets: [
          {type: "scatter", label: "samples", data: data.points.map((p) => ({x: p.x, y: p.y})),
           backgroundColor: COLORS.point, pointRadius: 4, pointHoverRadius: 6},
        ].concat(lines.map((line, i) => ({
          // One line per series (each check of it) or branch: medians of its own kernels only.
          type: "line", label: `median, ${line.name}`, data: line.points,
          borderColor: LINE_COLORS[i % LINE_COLORS.length], backgroundColor: LINE_COLORS[i % LINE_COLORS.length],
          pointRadius: 3, tension: 0, spanGaps: true}))),
      },
      options: {
        parsing: false,
        scales: {
          x: {type: "linear", min: -0.5, max: labels.length - 0.5,
              title: {display: true, text: (release ? `kernel ${release}: commit` : "kernel")
                                           + (subjects ? " (patch subject)" : "") + ", in the order of its first run"},
              // One tick per kernel, named by the kernel (the axis is the kernels' order).
              afterBuildTicks: (axis) => { axis.ticks = labels.map((_, i) => ({value: i})); },
              // Every kernel named, the regression's own among them: none skipped (issue 44).
              ticks: {autoSkip: false, maxRotation: labels.length > 8 ? 60 : 0, font: {size: 11},
                      callback: (v) => ticks[v] || ""}},
          y: {title: {display: true, text: `${data.key.metric} (${data.unit})`}},
        },
        plugins: {
          legend: {position: "bottom"},
          iowatchMarks: {marks: data.marks || []},
          iowatchChangePoints: {at: data.change_points.map((c) => c.x),
                                labels: data.change_points.map((c) => c.change_pct == null ? "change point" : signed(c.change_pct))},
          tooltip: {callbacks: {title: (items) => {
            const k = items.length ? data.kernels[Math.round(items[0].parsed.x)] : null;
            return k ? [k.label].concat(k.subject ? [k.subject] : []) : "";
          }}},
        },
        onClick: (event, elements) => {
          const hit = elements.find((e) => e.datasetIndex === 0);
          if (hit) window.location.href = "/runs/" + encodeURIComponent(data.points[hit.index].run) + "/";
        },
        onHover: (event, elements) => {
          event.native.target.style.cursor = elements.some((e) => e.datasetIndex === 0) ? "pointer" : "default";
        },
      },
    });
    canvas.chart = chart;
    // The change points in words under the chart (text, never HTML).
    const list = document.getElementById("change-points");
    if (list && canvas.id === "history-chart") {
      data.change_points.forEach((c) => {
        const k = data.kernels[c.x] || {};
        const li = document.createElement("li");
        li.textContent = `Change point: ${c.change_pct == null ? "a step" : signed(c.change_pct)} at ${c.kernel}`
          + (k.subject ? ` ("${k.subject}")` : "")
          + (c.before_mean != null ? `, mean ${number(c.before_mean)} → ${number(c.after_mean)} ${data.unit}` : "");
        list.appendChild(li);
      });
    }
    drawn(canvas);
  }

  // Published results: one chart per claim, the post's two numbers beside the
  // lab's per host and device, as horizontal bars (names stay readable) on a
  // linear axis from zero; a 19 KiB/s bar beside 17,480 keeps MIN_BAR pixels.
  const PUBLISHED_KINDS = {published: COLORS.published, before: COLORS.base, after: COLORS.measured,
                           newest: COLORS.point};
  function drawPublished(canvas, data) {
    const claim = data.claims.find((c) => String(c.id) === canvas.dataset.claim);
    if (!claim) { note(canvas, "No such claim.", true); return; }
    // One chart per metric and unit of the claim (a ratio and IOPS never share an axis).
    const part = (claim.charts || [{metric: claim.metric, unit: claim.unit, bars: claim.bars}])[Number(canvas.dataset.part || 0)];
    if (!part) { note(canvas, "No such chart.", true); return; }
    const bars = part.bars.filter((b) => b.value != null);
    if (!bars.length) { note(canvas, "No numbers to chart."); return; }
    canvas.parentNode.style.height = (60 + 34 * bars.length) + "px";
    const fmt = (v) => Math.abs(v) >= 100 ? Math.round(v).toLocaleString("en-US") : String(Number(v.toPrecision(3)));
    canvas.chart = new Chart(canvas, {
      type: "bar",
      data: {labels: bars.map((b) => b.label),
             datasets: [{label: `${part.metric} (${part.unit})`, data: bars.map((b) => b.value),
                         backgroundColor: bars.map((b) => PUBLISHED_KINDS[b.kind] || COLORS.measured),
                         minBarLength: MIN_BAR}]},
      options: {
        indexAxis: "y",
        plugins: {legend: {display: false},
                  tooltip: {callbacks: {label: (item) => `${fmt(item.parsed.x)} ${part.unit}`}}},
        scales: {
          x: {beginAtZero: true, title: {display: true, text: `${part.metric} (${part.unit})`}, ticks: {maxRotation: 0, callback: (v) => fmt(v)}},
          y: {ticks: {autoSkip: false}},
        },
      },
    });
    drawn(canvas);
  }

  function drawStates(canvas, data) {
    const states = Object.keys(data.regressions_by_state);
    new Chart(canvas, {
      type: "bar",
      data: {labels: states, datasets: [{label: "regressions", data: states.map((s) => data.regressions_by_state[s]),
             backgroundColor: states.map((s) => s === "new" ? COLORS.regression : COLORS.candidate)}]},
      options: {plugins: {legend: {display: false}}, scales: {y: {beginAtZero: true, ticks: {precision: 0}}}},
    });
    drawn(canvas);
  }

  const DRAW = {compare: drawCompare, history: drawHistory, published: drawPublished, states: drawStates};
  const fetched = {};

  function load(url) {
    if (!fetched[url]) {
      fetched[url] = fetch(url, {headers: {Accept: "application/json"}, credentials: "same-origin"})
        .then((r) => r.ok ? r.json() : r.json().then((body) => Promise.reject(new Error(body.error || r.statusText))));
    }
    return fetched[url];
  }

  document.querySelectorAll("canvas[data-chart]").forEach((canvas) => {
    const draw = DRAW[canvas.dataset.chart];
    if (!draw) return;
    load(canvas.dataset.src).then((data) => draw(canvas, data))
      .catch((e) => note(canvas, "Could not draw the chart: " + e.message, true));
  });

  // The history page's choosers: a new choice shows its history at once, with
  // the parts that depend on it emptied for the server to fill from the store.
  const HISTORY_DEPENDS = {study: ["device", "filesystem", "group", "metric"], host: ["device", "filesystem"],
                           device: ["filesystem"], group: ["metric"]};
  const historyKey = document.getElementById("history-key");
  if (historyKey) {
    historyKey.querySelectorAll("select[data-part]").forEach((select) => {
      select.addEventListener("change", () => {
        (HISTORY_DEPENDS[select.dataset.part] || []).forEach((part) => { historyKey.elements[part].value = ""; });
        historyKey.submit();
      });
    });
  }

  // The text report's copy button: the clipboard API where the page may use it,
  // else a selection the user copies.
  const copy = document.getElementById("copy-report");
  if (copy) {
    copy.addEventListener("click", () => {
      const source = document.getElementById(copy.dataset.copy);
      const state = document.getElementById("copy-state");
      const text = source.textContent;
      const selectIt = () => {
        const range = document.createRange();
        range.selectNodeContents(source);
        const selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        state.textContent = "selected: press Ctrl+C";
      };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(() => { state.textContent = "copied"; }, selectIt);
      } else {
        selectIt();
      }
    });
  }
})();
