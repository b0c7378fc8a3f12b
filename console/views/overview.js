// The overview: every queue's, the op queue's and the outbox's counts,
// refreshed every two seconds without reloading the page.
import { get } from '../api.js';
import { h, show, table, age } from '../dom.js';
import { chart } from '../chart.js';

const refreshMs = 2000;
const chartEvery = 5; // refreshes: the charts' data moves once per sample

function charts(t) {
  if (!t) return h('p', { class: 'muted' }, 'Loading…');
  const now = Date.now() / 1000;
  const blocks = [];
  for (const q of t.mq.queues) blocks.push(h('figure', { class: 'card', dataset: { chart: `mq:${q.queue}` } }, h('figcaption', {}, `queue ${q.queue}`), chart(`queue ${q.queue}`, q.points, now)));
  if (t.ops.available) {
    for (const o of t.ops.types) blocks.push(h('figure', { class: 'card', dataset: { chart: `ops:${o.type}` } }, h('figcaption', {}, `op type ${o.type}`), chart(`op type ${o.type}`, o.points, now)));
  }
  if (!blocks.length) return h('p', { class: 'muted', id: 'charts-empty' }, 'No throughput sampled yet.');
  return h('div', {},
    h('p', { class: 'muted legend' }, h('span', { class: 'key-in' }, '— enqueued/s'), ' ', h('span', { class: 'key-out' }, '— completed/s'),
      ` · queues sampled every ${t.mq.interval_s} s while the server runs; ops per minute from their rows`),
    h('div', { class: 'cards charts', id: 'charts' }, blocks));
}

// The relay lag the transaction horizon causes (PostgreSQL only): ordered
// rows committed but not yet claimable, and the open transaction holding them.
function horizonCards(z) {
  if (!z || !z.applies) return [];
  const holder = z.oldest_transaction_age_s === null ? 'no open transaction'
    : `${age(z.oldest_transaction_age_s)}${z.oldest_transaction_pid === null ? ' (prepared)' : ` (pid ${z.oldest_transaction_pid})`}`;
  return [
    h('div', { class: 'card', id: 'horizon-held', title: `horizon xid ${z.horizon_xid}, next xid ${z.next_xid}` },
      h('div', { class: 'muted' }, 'held by the horizon'), h('div', { class: 'big' }, z.held > 10000 ? '> 10,000' : z.held)),
    h('div', { class: 'card', id: 'horizon-holder' }, h('div', { class: 'muted' }, 'horizon held by'),
      h('div', { class: 'big' }, holder)),
  ];
}

function render(o, t) {
  const queues = o.mq.queues;
  const mq = queues.length
    ? table([
      ['Queue', (q) => h('a', { href: `#/mq?queue=${encodeURIComponent(q.queue)}` }, q.queue)],
      ['Visible', (q) => q.visible, 'num'],
      ['In flight', (q) => q.in_flight, 'num'],
      ['Delayed', (q) => q.delayed, 'num'],
      ['Quarantined', (q) => q.quarantined ? h('a', { href: `#/mq/quarantine?queue=${encodeURIComponent(q.queue)}` }, q.quarantined) : 0, 'num'],
      ['Dead-lettered', (q) => q.dead_letter_queue
        ? h('a', { href: `#/mq?queue=${encodeURIComponent(q.dead_letter_queue)}`, title: `in ${q.dead_letter_queue}` }, q.dead_lettered)
        : '—', 'num'],
      ['Oldest waiting', (q) => age(q.oldest_age_s), 'num'],
    ], queues, { id: 'mq-overview' })
    : h('p', { class: 'muted' }, 'No queue holds a message.');
  const ops = o.ops.available
    ? h('div', {},
      h('div', { class: 'cards', id: 'ops-overview' },
        ['pending', 'running', 'failed', 'done_24h', 'cancelled'].map((k) =>
          h('a', { class: 'card', href: `#/ops?status=${k === 'done_24h' ? 'done' : k}`, dataset: { count: k } },
            h('div', { class: 'muted' }, k === 'done_24h' ? 'done (24 h)' : k), h('div', { class: 'big' }, o.ops[k])))),
      o.ops.types.length ? table([
        ['Type', (t) => h('a', { href: `#/ops?type=${encodeURIComponent(t.type)}` }, t.type)],
        ['Pending', (t) => t.pending, 'num'],
        ['Running', (t) => t.running, 'num'],
        ['Failed', (t) => t.failed ? h('a', { href: `#/ops?status=failed&type=${encodeURIComponent(t.type)}` }, t.failed) : 0, 'num'],
        ['Done (24 h)', (t) => t.done_24h, 'num'],
        ['Cancelled', (t) => t.cancelled, 'num'],
        ['Oldest pending', (t) => age(t.oldest_pending_age_s), 'num'],
      ], o.ops.types, { id: 'ops-types' }) : null)
    : h('p', { class: 'notice' }, o.ops.why);
  const outbox = o.outbox.available
    ? h('div', { class: 'cards', id: 'outbox-overview' },
      ['pending', 'leased', 'expired_leases', 'dead'].map((k) =>
        h('a', { class: 'card', href: `#/outbox?state=${k === 'expired_leases' ? 'leased' : k}`, dataset: { count: k } },
          h('div', { class: 'muted' }, k.replace('_', ' ')), h('div', { class: 'big' }, o.outbox[k]))),
      h('div', { class: 'card' }, h('div', { class: 'muted' }, 'oldest pending'),
        h('div', { class: 'big' }, age(o.outbox.oldest_pending_age_s))),
      horizonCards(o.outbox.horizon))
    : h('p', { class: 'notice' }, o.outbox.why);
  show(
    h('h1', {}, 'Overview'),
    h('h2', {}, 'Message queues'), mq,
    h('h2', {}, 'Op queue'), ops,
    h('h2', {}, 'Outbox'), outbox,
    h('h2', {}, 'Throughput, last hour'), charts(t),
    h('p', { class: 'muted', id: 'refreshed' }, `Updated ${new Date().toLocaleTimeString()}`));
}

export async function overview() {
  let t = await get('throughput');
  let last = JSON.stringify(await get('overview'));
  render(JSON.parse(last), t);
  let stopped = false;
  let tick = 0;
  const timer = setInterval(async () => {
    try {
      tick += 1;
      const chartsDue = tick % chartEvery === 0;
      if (chartsDue) t = await get('throughput');
      const o = JSON.stringify(await get('overview'));
      // Unchanged counts leave the page (and the keyboard focus) alone.
      if (!stopped && (o !== last || chartsDue)) render(JSON.parse(o), t);
      last = o;
    } catch {
      // The next tick tries again; the page keeps the last counts.
    }
  }, refreshMs);
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
