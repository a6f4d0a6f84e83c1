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

  // Error bars: dataset.errorBars[i] = [low, high] in the value axis' units.
  const errorBarsPlugin = {
    id: "iowatchErrorBars",
    afterDatasetsDraw(chart) {
      const ctx = chart.ctx;
      chart.data.datasets.forEach((dataset, d) => {
        const meta = chart.getDatasetMeta(d);
        if (!dataset.errorBars || meta.hidden) return;
        const y = chart.scales[meta.yAxisID];
        ctx.save();
        ctx.strokeStyle = "#222";
        ctx.lineWidth = 1.5;
        meta.data.forEach((bar, i) => {
          const range = dataset.errorBars[i];
          if (!range || range[0] == null || range[1] == null) return;
          const top = y.getPixelForValue(range[1]), bottom = y.getPixelForValue(range[0]);
          const half = Math.min(6, (bar.width || 12) / 4);
          ctx.beginPath();
          ctx.moveTo(bar.x, top); ctx.lineTo(bar.x, bottom);
          ctx.moveTo(bar.x - half, top); ctx.lineTo(bar.x + half, top);
          ctx.moveTo(bar.x - half, bottom); ctx.lineTo(bar.x + half, bottom);
          ctx.stroke();
        });
        ctx.restore();
      });
    },
  };

  // Change points: options.plugins.iowatchChangePoints.at = [x index, ...].
  const changePointsPlugin = {
    id: "iowatchChangePoints",
    afterDatasetsDraw(chart, args, options) {
      const at = (options && options.at) || [];
      if (!at.length) return;
      const x = chart.scales.x, area = chart.chartArea, ctx = chart.ctx;
      ctx.save();
      ctx.strokeStyle = COLORS.regression;
      ctx.lineWidth = 2;
      ctx.setLineDash([6, 4]);
      at.forEach((index) => {
        // Between the last kernel before the step and the first after it.
        const px = (x.getPixelForValue(index - 1) + x.getPixelForValue(index)) / 2;
        ctx.beginPath(); ctx.moveTo(px, area.top); ctx.lineTo(px, area.bottom); ctx.stroke();
      });
      ctx.restore();
    },
  };

  Chart.register(errorBarsPlugin, changePointsPlugin);
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

  function cellLabel(c) {
    return [c.study, c.device_class, c.filesystem, c.group, c.metric].filter(Boolean).join(" / ");
  }

  function drawCompare(canvas, data) {
    const cells = data.cells;
    if (!cells.length) { note(canvas, "No cells to chart."); return; }
    const base = [], candidate = [], baseErr = [], candErr = [], colors = [];
    cells.forEach((c) => {
      const mean = c.base.mean;
      const sem = (c.base.sd != null && c.base.n > 1) ? 1.96 * c.base.sd / Math.sqrt(c.base.n) : null;
      base.push(100);
      baseErr.push(sem != null && mean ? [100 - 100 * sem / mean, 100 + 100 * sem / mean] : null);
      const change = c.change_pct == null ? null : 100 + c.change_pct;
      candidate.push(change);
      candErr.push(c.ci_low == null || c.size_only ? null : [100 + c.ci_low, 100 + c.ci_high]);
      colors.push(COLORS[c.outcome] || COLORS.candidate);
    });
    new Chart(canvas, {
      type: "bar",
      data: {
        labels: cells.map(cellLabel),
        datasets: [
          {label: "base", data: base, backgroundColor: COLORS.base, errorBars: baseErr},
          {label: "candidate", data: candidate, backgroundColor: colors, errorBars: candErr},
        ],
      },
      options: {
        scales: {y: {title: {display: true, text: "% of the base mean"}, beginAtZero: true}},
        plugins: {tooltip: {callbacks: {
          afterLabel: (item) => {
            const c = cells[item.dataIndex];
            return item.datasetIndex === 0
              ? `mean ${c.base.mean.toFixed(1)} ${c.unit} (n=${c.base.n})`
              : `mean ${c.candidate.mean.toFixed(1)} ${c.unit} (n=${c.candidate.n}); ${c.outcome}`;
          }}}},
      },
    });
    drawn(canvas);
  }

  function drawHistory(canvas, data) {
    if (!data.points.length) { note(canvas, "No samples for this series key."); return; }
    const labels = data.kernels.map((k) => k.label);
    const chart = new Chart(canvas, {
      type: "line",
      data: {
        labels: labels,
        datasets: [
          {type: "scatter", label: "samples", data: data.points.map((p) => ({x: p.x, y: p.y})),
           backgroundColor: COLORS.point, pointRadius: 4, pointHoverRadius: 6},
          {type: "line", label: "median per kernel", data: data.kernels.map((k, i) => ({x: i, y: k.median})),
           borderColor: COLORS.median, backgroundColor: COLORS.median, pointRadius: 2, tension: 0},
        ],
      },
      options: {
        parsing: false,
        scales: {
          x: {type: "linear", min: -0.5, max: labels.length - 0.5,
              // One tick per kernel, named by the kernel (the axis is the kernels' order).
              afterBuildTicks: (axis) => { axis.ticks = labels.map((_, i) => ({value: i})); },
              ticks: {autoSkip: true, maxRotation: 60, callback: (v) => labels[v] || ""}},
          y: {title: {display: true, text: `${data.key.metric} (${data.unit})`}},
        },
        plugins: {
          iowatchChangePoints: {at: data.change_points.map((c) => c.x)},
          tooltip: {callbacks: {title: (items) => items.length ? (labels[Math.round(items[0].parsed.x)] || "") : ""}},
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
    drawn(canvas);
  }

  function drawPublished(canvas, data) {
    const row = data.rows[Number(canvas.dataset.row)];
    if (!row) return;
    const labels = [], values = [], colors = [];
    data.published_columns.forEach((c, i) => {
      if (row.published[i] != null) { labels.push(c + " (published)"); values.push(row.published[i]); colors.push(COLORS.published); }
    });
    data.measured_columns.forEach((c, i) => {
      if (row.measured[i] != null) { labels.push(c); values.push(row.measured[i]); colors.push(COLORS.measured); }
    });
    new Chart(canvas, {
      type: "bar",
      data: {labels: labels, datasets: [{label: `${row.metric} (${row.unit})`, data: values, backgroundColor: colors}]},
      options: {plugins: {legend: {display: false}}, scales: {y: {beginAtZero: true, title: {display: true, text: row.unit}}}},
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
