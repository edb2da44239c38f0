// Lag charts as inline SVG: a sparkline for table cells and a larger
// chart with its scale for a group's page. The lag axis starts at 0, so a
// flat line high up means a steady, non-zero lag.

import { svg, int, time } from './dom.js';

// points maps samples [{at, lag}] to [x, y] in a w × h box. x follows the
// sample times when they differ, else the sample index.
function points(samples, w, h, pad) {
  const ts = samples.map((s) => Date.parse(s.at));
  const t0 = ts[0], t1 = ts[ts.length - 1];
  const byTime = ts.every((t) => !isNaN(t)) && t1 > t0;
  const max = Math.max(1, ...samples.map((s) => s.lag));
  return samples.map((s, i) => {
    const f = byTime ? (ts[i] - t0) / (t1 - t0) : samples.length > 1 ? i / (samples.length - 1) : 1;
    return [pad + f * (w - 2 * pad), pad + (1 - s.lag / max) * (h - 2 * pad)];
  });
}

function line(pts) {
  return pts.map(([x, y]) => `${x.toFixed(1)},${y.toFixed(1)}`).join(' ');
}

// sparkline draws samples [{at, lag}] (oldest first) small, with the
// latest and largest lag in its tooltip.
export function sparkline(samples, w = 120, h = 24) {
  samples = samples || [];
  const root = svg('svg', {
    class: 'spark', width: w, height: h, viewBox: `0 0 ${w} ${h}`,
    role: 'img', 'data-testid': 'sparkline', 'data-samples': samples.length,
  });
  if (samples.length === 0) {
    root.append(svg('title', {}, 'No samples yet'));
    root.append(svg('line', { x1: 2, x2: w - 2, y1: h - 2, y2: h - 2, class: 'spark-none' }));
    return root;
  }
  const pts = points(samples, w, h, 2);
  const last = samples[samples.length - 1].lag;
  const max = Math.max(...samples.map((s) => s.lag));
  root.append(
    svg('title', {}, `lag ${int(last)} now, at most ${int(max)} over ${samples.length} samples`),
    svg('polygon', { class: 'spark-area', points: `${pts[0][0]},${h - 2} ${line(pts)} ${pts[pts.length - 1][0]},${h - 2}` }),
    svg('polyline', { class: 'spark-line', points: line(pts) }),
    svg('circle', { class: 'spark-dot', cx: pts[pts.length - 1][0], cy: pts[pts.length - 1][1], r: 2 }),
  );
  return root;
}

// chart draws samples larger, with the lag scale and the time span.
export function chart(samples) {
  samples = samples || [];
  const w = 640, h = 140, left = 56, bottom = 18;
  const root = svg('svg', {
    class: 'chart', viewBox: `0 0 ${w} ${h}`, role: 'img', 'data-testid': 'lag-chart',
  });
  if (samples.length === 0) {
    root.append(svg('text', { x: w / 2, y: h / 2, 'text-anchor': 'middle', class: 'chart-label' }, 'No lag samples yet'));
    return root;
  }
  const max = Math.max(1, ...samples.map((s) => s.lag));
  const pts = points(samples, w - left, h - bottom, 4).map(([x, y]) => [x + left, y]);
  const base = h - bottom - 4;
  root.append(
    svg('line', { class: 'chart-axis', x1: left, x2: w, y1: base, y2: base }),
    svg('line', { class: 'chart-grid', x1: left, x2: w, y1: 4, y2: 4 }),
    svg('text', { class: 'chart-label', x: left - 6, y: 8, 'text-anchor': 'end' }, int(max)),
    svg('text', { class: 'chart-label', x: left - 6, y: base + 4, 'text-anchor': 'end' }, '0'),
    svg('text', { class: 'chart-label', x: left, y: h - 2 }, time(samples[0].at)),
    svg('text', { class: 'chart-label', x: w, y: h - 2, 'text-anchor': 'end' }, time(samples[samples.length - 1].at)),
    svg('polygon', { class: 'spark-area', points: `${pts[0][0]},${base} ${line(pts)} ${pts[pts.length - 1][0]},${base}` }),
    svg('polyline', { class: 'spark-line', points: line(pts) }),
  );
  return root;
}
