// The message queue's pages: a queue's messages with filters, one message,
// the quarantine and one quarantined row, and redrive.
import { get, post } from '../api.js';
import { h, show, table, fields, confirmAction, status } from '../dom.js';
import { go, session } from '../nav.js';
import { pager } from './pager.js';

const states = ['', 'visible', 'in_flight', 'delayed'];

async function queueNames() {
  const o = await get('overview');
  return o.mq.queues.map((q) => q.queue);
}

function filterForm(names, p, onSubmit) {
  const queue = h('select', { name: 'queue', id: 'f-queue' },
    names.map((n) => h('option', { value: n, selected: n === p.queue }, n)));
  const input = (name, label, attrs = {}) => h('label', {}, label, h('input', { name, id: `f-${name}`, value: p[name] || '', ...attrs }));
  const state = h('select', { name: 'state', id: 'f-state' },
    states.map((s) => h('option', { value: s, selected: s === (p.state || '') }, s || 'any')));
  const form = h('form', { class: 'filters', id: 'filters' },
    h('label', {}, 'Queue', queue),
    h('label', {}, 'State', state),
    input('group', 'Group', { maxlength: 128 }),
    input('id_prefix', 'Id starts with', { maxlength: 200 }),
    input('min_age', 'Older than (s)', { inputmode: 'numeric', pattern: '[0-9]*', size: 8 }),
    h('button', { type: 'submit', class: 'primary' }, 'Filter'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    onSubmit(Object.fromEntries(new FormData(form)));
  });
  return form;
}

// Purge asks for the queue's name, typed again, as the server does.
async function purge(queue) {
  const typed = await confirmAction(`Delete every message of ${queue}, claimed ones too? Type the queue's name to confirm.`,
    { needReason: true, label: 'Purge', inputLabel: "The queue's name" });
  if (typed === null) return;
  try {
    await post('mq/purge', { queue, confirm: typed });
    go('', {});
  } catch (e) {
    document.getElementById('main').prepend(status(e.message, true));
  }
}

export async function mqMessages(p) {
  const names = await queueNames();
  if (!p.queue && names.length) p.queue = names[0];
  if (!p.queue) {
    show(h('h1', {}, 'Messages'), h('p', { class: 'muted' }, 'No queue holds a message.'));
    return;
  }
  const page = await get('mq/messages', { ...p, limit: p.limit || 50 });
  const filters = { queue: p.queue, state: p.state, group: p.group, id_prefix: p.id_prefix, min_age: p.min_age };
  const key = JSON.stringify(filters);
  show(
    h('h1', {}, `Messages of ${p.queue}`),
    filterForm(names, p, (f) => go('mq', f)),
    h('p', {}, h('a', { href: `#/mq/quarantine?queue=${encodeURIComponent(p.queue)}` }, 'Quarantined rows of this queue')),
    session.current.read_only ? null : h('div', { class: 'actions' },
      h('button', { type: 'button', id: 'purge', class: 'danger', onclick: () => purge(p.queue) }, 'Purge the queue…')),
    page.messages.length
      ? table([
        ['Id', (m) => h('a', { href: `#/mq/message?queue=${encodeURIComponent(m.queue)}&id=${encodeURIComponent(m.id)}` }, m.id)],
        ['State', (m) => m.state],
        ['Group', (m) => m.group ?? '—'],
        ['Receives', (m) => m.receive_count, 'num'],
        ['Created', (m) => m.created_at],
        ['Visible at', (m) => m.visible_at],
        ['Bytes', (m) => m.payload_bytes, 'num'],
      ], page.messages, { id: 'messages' })
      : h('p', { class: 'muted', id: 'messages-empty' }, 'No message matches.'),
    pager(key, p.after, page.next, (after) => go('mq', { ...filters, after })));
}

export async function mqMessage(p) {
  const m = await get('mq/message', { queue: p.queue, id: p.id });
  const out = h('div', {});
  const act = async (route, body, question, label) => {
    if ((await confirmAction(question, { label })) === null) return;
    try {
      await post(`mq/${route}`, { queue: m.queue, id: m.id, ...body });
      await mqMessage(p);
      document.getElementById('main').prepend(status(route === 'release' ? 'Released: the message is visible again.' : 'Extended.'));
    } catch (e) {
      out.replaceChildren(status(e.message, true));
    }
  };
  const seconds = h('input', { id: 'extend-seconds', type: 'number', min: 1, max: 43200, value: 300, 'aria-label': 'seconds' });
  const claimed = m.state === 'in_flight' && !session.current.read_only;
  show(
    h('h1', {}, 'Message'),
    fields([['Queue', m.queue], ['Id', m.id], ['State', m.state], ['Group', m.group], ['Receive count', String(m.receive_count)],
      ['Created', m.created_at], ['Visible at', m.visible_at], ['Payload bytes', String(m.payload_bytes)]]),
    claimed ? h('div', { class: 'actions' },
      h('button', { type: 'button', id: 'release', onclick: () => act('release', {}, `Release ${m.id}? Its consumer's claim ends and the message is visible again.`, 'Release') }, 'Release'),
      h('label', {}, 'Extend the claim by (s)', seconds),
      h('button', { type: 'button', id: 'extend', onclick: () => act('extend', { seconds: Number(seconds.value) }, `Extend the claim on ${m.id} by ${seconds.value} s?`, 'Extend') }, 'Extend')) : null,
    out,
    h('h2', {}, m.payload_json ? 'Payload' : 'Payload (not JSON: the raw text)'),
    h('pre', { id: 'payload' }, m.payload),
    h('p', {}, h('a', { href: `#/mq?queue=${encodeURIComponent(m.queue)}` }, `← Messages of ${m.queue}`)));
}

async function redrive(queue, ids, all) {
  const what = all ? `every quarantined row of ${queue}` : `${ids.length} row(s) of ${queue}`;
  const reason = await confirmAction(`Redrive ${what} back to the queue?`, { askReason: true, label: 'Redrive' });
  if (reason === null) return null;
  return post('mq/redrive', all ? { queue, all: true, reason } : { queue, ids, reason });
}

function redriveOutcome(r) {
  const parts = [`${r.redriven.length} redriven`];
  if (r.conflicts.length) parts.push(`${r.conflicts.length} kept (a live message holds the id)`);
  if (r.missing.length) parts.push(`${r.missing.length} not in quarantine`);
  return parts.join(', ');
}

export async function mqQuarantine(p) {
  const page = await get('mq/quarantined', { queue: p.queue, after: p.after, limit: p.limit || 50 });
  const readOnly = session.current.read_only;
  const boxes = new Map();
  const out = h('div', {});
  const act = async (all) => {
    const ids = [...boxes].filter(([, box]) => box.checked).map(([id]) => id);
    if (!all && !ids.length) {
      out.replaceChildren(status('Select rows first.', true));
      return;
    }
    try {
      const r = await redrive(p.queue, ids, all);
      if (r) {
        await mqQuarantine(p);
        document.getElementById('main').prepend(status(redriveOutcome(r)));
      }
    } catch (e) {
      out.replaceChildren(status(e.message, true));
    }
  };
  show(
    h('h1', {}, `Quarantined rows of ${p.queue}`),
    readOnly ? null : h('div', { class: 'actions' },
      h('button', { type: 'button', id: 'redrive-selected', onclick: () => act(false) }, 'Redrive selected'),
      h('button', { type: 'button', id: 'redrive-all', onclick: () => act(true) }, 'Redrive all')),
    out,
    page.rows.length
      ? table([
        ['', (q) => {
          const box = h('input', { type: 'checkbox', 'aria-label': `select ${q.id}`, value: q.id });
          boxes.set(q.id, box);
          return readOnly ? '' : box;
        }],
        ['Id', (q) => h('a', { href: `#/mq/quarantined?queue=${encodeURIComponent(q.queue)}&id=${encodeURIComponent(q.id)}` }, q.id)],
        ['Reason', (q) => q.error_message],
        ['Receives', (q) => q.receive_count ?? '—', 'num'],
        ['Failed at', (q) => q.failed_at],
      ], page.rows, { id: 'quarantined' })
      : h('p', { class: 'muted', id: 'quarantine-empty' }, 'The quarantine is empty.'),
    pager(`q:${p.queue}`, p.after, page.next, (after) => go('mq/quarantine', { queue: p.queue, after })),
    h('p', {}, h('a', { href: `#/mq?queue=${encodeURIComponent(p.queue)}` }, `← Messages of ${p.queue}`)));
}

export async function mqQuarantined(p) {
  const q = await get('mq/quarantined_message', { queue: p.queue, id: p.id });
  const out = h('div', {});
  show(
    h('h1', {}, 'Quarantined row'),
    fields([['Queue', q.queue], ['Id', q.id], ['Group', q.group], ['Reason', q.error_message],
      ['Receive count', q.receive_count === null ? null : String(q.receive_count)], ['Created', q.created_at], ['Failed at', q.failed_at]]),
    session.current.read_only ? null : h('div', { class: 'actions' },
      h('button', { type: 'button', id: 'redrive-one', onclick: async () => {
        try {
          const r = await redrive(q.queue, [q.id], false);
          if (r) out.replaceChildren(status(redriveOutcome(r)));
        } catch (e) {
          out.replaceChildren(status(e.message, true));
        }
      } }, 'Redrive')),
    out,
    h('h2', {}, q.payload_json ? 'Payload' : 'Payload (not JSON: the raw text)'),
    h('pre', { id: 'payload' }, q.payload),
    h('p', {}, h('a', { href: `#/mq/quarantine?queue=${encodeURIComponent(q.queue)}` }, '← Quarantine')));
}
