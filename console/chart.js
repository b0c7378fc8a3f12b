// A throughput chart as plain SVG: enqueued and completed per second over
// the last hour, from points {t (unix seconds), enqueued, completed}.
const ns = 'http://www.w3.org/2000/svg';
const width = 360;
const height = 110;
const pad = { left: 34, right: 6, top: 8, bottom: 18 };

function el(tag, attrs, text) {
  const e = document.createElementNS(ns, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

function rate(v) {
  if (v >= 100) return v.toFixed(0);
  if (v >= 10) return v.toFixed(1);
  return v.toFixed(2);
}

export function chart(title, points, nowSeconds) {
  const svg = el('svg', { class: 'chart', width, height, viewBox: `0 0 ${width} ${height}`, role: 'img' });
  const last = points.length ? points[points.length - 1] : null;
  const label = `${title}: ${last ? `${rate(last.enqueued)} enqueued/s, ${rate(last.completed)} completed/s now` : 'no samples yet'}`;
  svg.setAttribute('aria-label', label);
  svg.append(el('title', {}, label));
  const from = nowSeconds - 3600;
  const max = Math.max(1, ...points.map((p) => Math.max(p.enqueued, p.completed)));
  const x = (t) => pad.left + ((t - from) / 3600) * (width - pad.left - pad.right);
  const y = (v) => height - pad.bottom - (v / max) * (height - pad.top - pad.bottom);
  svg.append(el('line', { x1: pad.left, y1: y(0), x2: width - pad.right, y2: y(0), stroke: '#d9dde5' }));
  svg.append(el('text', { x: 2, y: pad.top + 8 }, rate(max)));
  svg.append(el('text', { x: 2, y: y(0) }, '0'));
  svg.append(el('text', { x: pad.left, y: height - 4 }, '−60 min'));
  svg.append(el('text', { x: width - pad.right - 22, y: height - 4 }, 'now'));
  for (const [key, cls] of [['enqueued', 'in'], ['completed', 'out']]) {
    const pts = points.filter((p) => p.t >= from).map((p) => `${x(p.t).toFixed(1)},${y(p[key]).toFixed(1)}`);
    if (pts.length === 1) pts.unshift(`${pad.left},${pts[0].split(',')[1]}`);
    if (pts.length) svg.append(el('polyline', { class: cls, points: pts.join(' '), 'data-series': key }));
  }
  return svg;
}
