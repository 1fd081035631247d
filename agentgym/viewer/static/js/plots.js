// Two small SVG charts: success per group with 95% intervals, and success over training steps.
const NS = "http://www.w3.org/2000/svg";

function s(tag, attrs = {}, text) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  if (text !== undefined) el.textContent = text;
  return el;
}

function frame(width, height, pad) {
  const svg = s("svg", { viewBox: `0 0 ${width} ${height}`, width, height, class: "plot", role: "img" });
  const y = (v) => pad.top + (1 - v) * (height - pad.top - pad.bottom);
  for (const v of [0, 0.25, 0.5, 0.75, 1]) {
    svg.append(s("line", { x1: pad.left, x2: width - pad.right, y1: y(v), y2: y(v), class: "grid" }));
    svg.append(s("text", { x: pad.left - 6, y: y(v) + 4, class: "axis", "text-anchor": "end" }, `${100 * v}%`));
  }
  return { svg, y };
}

// bars: [{label, rate, ci: [lo, hi], n}]
export function barChart(bars, title) {
  const pad = { top: 24, bottom: 56, left: 44, right: 10 };
  const width = Math.max(360, pad.left + pad.right + 56 * bars.length);
  const height = 240;
  const { svg, y } = frame(width, height, pad);
  svg.setAttribute("aria-label", title);
  svg.append(s("text", { x: pad.left, y: 14, class: "title" }, title));
  const step = (width - pad.left - pad.right) / Math.max(bars.length, 1);
  bars.forEach((b, i) => {
    const x = pad.left + i * step + step * 0.2;
    const w = step * 0.6;
    const g = s("g", { class: "bar-group" });
    g.append(s("title", {}, `${b.label}: ${(100 * b.rate).toFixed(1)}% [${(100 * b.ci[0]).toFixed(1)}, ${(100 * b.ci[1]).toFixed(1)}], n=${b.n}`));
    g.append(s("rect", { x, y: y(b.rate), width: w, height: y(0) - y(b.rate), class: "bar" }));
    const cx = x + w / 2;
    g.append(s("line", { x1: cx, x2: cx, y1: y(b.ci[0]), y2: y(b.ci[1]), class: "whisker" }));
    for (const v of b.ci) g.append(s("line", { x1: cx - 5, x2: cx + 5, y1: y(v), y2: y(v), class: "whisker" }));
    const label = b.label.length > 12 ? b.label.slice(0, 11) + "…" : b.label;
    g.append(s("text", { x: cx, y: height - pad.bottom + 16, class: "axis", "text-anchor": "middle" }, label));
    g.append(s("text", { x: cx, y: height - pad.bottom + 30, class: "axis small", "text-anchor": "middle" }, `n=${b.n}`));
    svg.append(g);
  });
  return svg;
}

// curves: [{label, points: [{step, success_rate, ci95}]}]
export function lineChart(curves, title) {
  const pad = { top: 24, bottom: 40, left: 44, right: 16 };
  const width = 640, height = 260;
  const { svg, y } = frame(width, height, pad);
  svg.setAttribute("aria-label", title);
  svg.append(s("text", { x: pad.left, y: 14, class: "title" }, title));
  const steps = curves.flatMap((c) => c.points.map((p) => p.step));
  const lo = Math.min(...steps), hi = Math.max(...steps);
  const x = (v) => pad.left + (hi === lo ? 0.5 : (v - lo) / (hi - lo)) * (width - pad.left - pad.right);
  const ticks = [...new Set(steps)].sort((a, b) => a - b);
  for (const v of ticks.length <= 12 ? ticks : [lo, hi]) {
    svg.append(s("text", { x: x(v), y: height - pad.bottom + 16, class: "axis", "text-anchor": "middle" }, String(v)));
  }
  svg.append(s("text", { x: width / 2, y: height - 8, class: "axis", "text-anchor": "middle" }, "training step"));
  curves.forEach((c, i) => {
    const g = s("g", { class: `curve c${i % 6}` });
    g.append(s("title", {}, c.label));
    const band = c.points.map((p) => `${x(p.step)},${y(p.ci95[1])}`)
      .concat(c.points.slice().reverse().map((p) => `${x(p.step)},${y(p.ci95[0])}`));
    g.append(s("polygon", { points: band.join(" "), class: "band" }));
    g.append(s("polyline", { points: c.points.map((p) => `${x(p.step)},${y(p.success_rate)}`).join(" "), class: "line" }));
    for (const p of c.points) g.append(s("circle", { cx: x(p.step), cy: y(p.success_rate), r: 3.5, class: "dot" }));
    g.append(s("text", { x: pad.left + 8, y: pad.top + 14 + 14 * i, class: "legend" }, c.label));
    svg.append(g);
  });
  return svg;
}

// points: [[step, value]] of one logged training metric, on its own y range (KL, loss, entropy).
export function valueChart(points, title, colour = 0) {
  const pad = { top: 24, bottom: 40, left: 56, right: 16 };
  const width = 420, height = 220;
  const svg = s("svg", { viewBox: `0 0 ${width} ${height}`, width, height, class: "plot", role: "img", "aria-label": title });
  svg.append(s("text", { x: pad.left, y: 14, class: "title" }, title));
  const steps = points.map((p) => p[0]), values = points.map((p) => p[1]);
  const [x0, x1] = [Math.min(...steps), Math.max(...steps)];
  let [y0, y1] = [Math.min(...values), Math.max(...values)];
  if (y0 === y1) { y0 -= 0.5; y1 += 0.5; }
  const x = (v) => pad.left + (x1 === x0 ? 0.5 : (v - x0) / (x1 - x0)) * (width - pad.left - pad.right);
  const y = (v) => pad.top + (1 - (v - y0) / (y1 - y0)) * (height - pad.top - pad.bottom);
  for (const v of [y0, (y0 + y1) / 2, y1]) {
    svg.append(s("line", { x1: pad.left, x2: width - pad.right, y1: y(v), y2: y(v), class: "grid" }));
    svg.append(s("text", { x: pad.left - 6, y: y(v) + 4, class: "axis", "text-anchor": "end" }, Number(v.toPrecision(3)).toString()));
  }
  for (const v of x1 === x0 ? [x0] : [x0, x1]) {
    svg.append(s("text", { x: x(v), y: height - pad.bottom + 16, class: "axis", "text-anchor": "middle" }, String(v)));
  }
  svg.append(s("text", { x: width / 2, y: height - 8, class: "axis", "text-anchor": "middle" }, "training step"));
  const g = s("g", { class: `curve c${colour % 6}` });
  g.append(s("polyline", { points: points.map((p) => `${x(p[0])},${y(p[1])}`).join(" "), class: "line" }));
  if (points.length <= 60) for (const p of points) g.append(s("circle", { cx: x(p[0]), cy: y(p[1]), r: 2.5, class: "dot" }));
  svg.append(g);
  return svg;
}
