// The overview: every queue's, the op queue's and the outbox's counts,
// refreshed every two seconds without reloading the page.
import { get } from '../api.js';
import { h, show, table, age } from '../dom.js';

const refreshMs = 2000;

function render(o) {
  const queues = o.mq.queues;
  const mq = queues.length
    ? table([
      ['Queue', (q) => h('a', { href: `#/mq?queue=${encodeURIComponent(q.queue)}` }, q.queue)],
      ['Visible', (q) => q.visible, 'num'],
      ['In flight', (q) => q.in_flight, 'num'],
      ['Delayed', (q) => q.delayed, 'num'],
      ['Quarantined', (q) => q.quarantined ? h('a', { href: `#/mq/quarantine?queue=${encodeURIComponent(q.queue)}` }, q.quarantined) : 0, 'num'],
      ['Oldest waiting', (q) => age(q.oldest_age_s), 'num'],
    ], queues, { id: 'mq-overview' })
    : h('p', { class: 'muted' }, 'No queue holds a message.');
  const ops = o.ops.available
    ? h('div', { class: 'cards', id: 'ops-overview' },
      ['pending', 'running', 'failed', 'done_24h', 'cancelled'].map((k) =>
        h('a', { class: 'card', href: `#/ops?status=${k === 'done_24h' ? 'done' : k}`, dataset: { count: k } },
          h('div', { class: 'muted' }, k === 'done_24h' ? 'done (24 h)' : k), h('div', { class: 'big' }, o.ops[k]))))
    : h('p', { class: 'notice' }, o.ops.why);
  const outbox = o.outbox.available
    ? h('div', { class: 'cards', id: 'outbox-overview' },
      ['pending', 'leased', 'expired_leases', 'dead'].map((k) =>
        h('a', { class: 'card', href: `#/outbox?state=${k === 'expired_leases' ? 'leased' : k}`, dataset: { count: k } },
          h('div', { class: 'muted' }, k.replace('_', ' ')), h('div', { class: 'big' }, o.outbox[k]))),
      h('div', { class: 'card' }, h('div', { class: 'muted' }, 'oldest pending'),
        h('div', { class: 'big' }, age(o.outbox.oldest_pending_age_s))))
    : h('p', { class: 'notice' }, o.outbox.why);
  show(
    h('h1', {}, 'Overview'),
    h('h2', {}, 'Message queues'), mq,
    h('h2', {}, 'Op queue'), ops,
    h('h2', {}, 'Outbox'), outbox,
    h('p', { class: 'muted', id: 'refreshed' }, `Updated ${new Date().toLocaleTimeString()}`));
}

export async function overview() {
  render(await get('overview'));
  let stopped = false;
  const timer = setInterval(async () => {
    try {
      const o = await get('overview');
      if (!stopped) render(o);
    } catch {
      // The next tick tries again; the page keeps the last counts.
    }
  }, refreshMs);
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
