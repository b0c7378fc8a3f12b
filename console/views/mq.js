// The message queue's pages: a queue's messages with filters (a dead-letter
// queue's with its redrive), one message with release and extend, and purge.
// The quarantine's pages are in quarantine.js.
import { get, post } from '../api.js';
import { h, show, table, fields, confirmAction, status } from '../dom.js';
import { go, session } from '../nav.js';
import { pager } from './pager.js';
import { deadLetters } from './dead_letters.js';

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
  const dlq = page.dead_letter_for?.length
    ? deadLetters(p.queue, page.dead_letter_for, filters, session.current.read_only, () => mqMessages(p)) : null;
  show(
    h('h1', {}, `Messages of ${p.queue}`),
    filterForm(names, p, (f) => go('mq', f)),
    h('p', {}, h('a', { href: `#/mq/quarantine?queue=${encodeURIComponent(p.queue)}` }, 'Quarantined rows of this queue')),
    session.current.read_only ? null : h('div', { class: 'actions' },
      h('button', { type: 'button', id: 'purge', class: 'danger', onclick: () => purge(p.queue) }, 'Purge the queue…')),
    dlq?.actions,
    page.messages.length
      ? table([
        ...(dlq && !session.current.read_only ? [['', (m) => dlq.box(m)]] : []),
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
