// The op queue's pages: ops by status and type, one op with retry and cancel, and a
// form that enqueues a new op.
import { get, post } from '../api.js';
import { h, show, table, fields, confirmAction, status } from '../dom.js';
import { go, session } from '../nav.js';
import { pager } from './pager.js';

const statuses = ['', 'pending', 'running', 'failed', 'done', 'cancelled'];

export async function opsList(p) {
  const page = await get('ops/list', { status: p.status, type: p.type, after: p.after, limit: p.limit || 50 });
  const select = h('select', { name: 'status', id: 'f-status' },
    statuses.map((s) => h('option', { value: s, selected: s === (p.status || '') }, s || 'any')));
  const type = h('input', { name: 'type', id: 'f-type', value: p.type || '', maxlength: 255 });
  const form = h('form', { class: 'filters', id: 'filters' }, h('label', {}, 'Status', select),
    h('label', {}, 'Type', type), h('button', { type: 'submit', class: 'primary' }, 'Filter'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    go('ops', { status: select.value, type: type.value });
  });
  show(
    h('h1', {}, 'Ops'),
    form,
    session.current.read_only ? null : h('p', {}, h('a', { href: '#/ops/enqueue', id: 'enqueue-link' }, 'Enqueue an op…')),
    page.ops.length
      ? table([
        ['Id', (o) => h('a', { href: `#/ops/op?id=${encodeURIComponent(o.id)}` }, o.id)],
        ['Type', (o) => o.type],
        ['Status', (o) => o.status],
        ['Priority', (o) => o.priority, 'num'],
        ['Attempts', (o) => `${o.attempts} / ${o.max_attempts}`, 'num'],
        ['Enqueued', (o) => o.enqueued_at],
        ['Last error', (o) => o.last_error || ''],
      ], page.ops, { id: 'ops' })
      : h('p', { class: 'muted', id: 'ops-empty' }, 'No op matches.'),
    pager(`ops:${p.status || ''}:${p.type || ''}`, p.after, page.next,
      (after) => go('ops', { status: p.status, type: p.type, after })));
}

export async function opsOne(p) {
  const o = await get('ops/op', { id: p.id });
  const out = h('div', {});
  const act = async (what, question) => {
    if ((await confirmAction(question, { label: what === 'retry' ? 'Retry' : 'Cancel the op' })) === null) return;
    try {
      await post(`ops/${what}`, { id: o.id, reset_attempts: true });
      await opsOne(p);
      document.getElementById('main').prepend(status(what === 'retry' ? 'Retried: the op is pending again.' : 'Cancelled.'));
    } catch (e) {
      out.replaceChildren(status(e.message, true));
    }
  };
  show(
    h('h1', {}, `Op ${o.id}`),
    fields([['Type', o.type], ['Status', o.status], ['Priority', String(o.priority)],
      ['Attempts', `${o.attempts} / ${o.max_attempts}`], ['Last error', o.last_error], ['Enqueued', o.enqueued_at],
      ['Started', o.started_at], ['Finished', o.finished_at], ['Not before', o.not_before], ['Dedup key', o.dedup_key],
      ['Lease owner', o.lease_owner], ['Heartbeat', o.heartbeat_at], ['Defect', o.defect]]),
    session.current.read_only ? null : h('div', { class: 'actions' },
      o.status === 'failed' ? h('button', { type: 'button', id: 'retry', onclick: () => act('retry', `Retry op ${o.id} with its attempts reset?`) }, 'Retry') : null,
      o.status === 'pending' || o.status === 'running' || o.status === 'failed'
        ? h('button', { type: 'button', id: 'cancel', class: 'danger', onclick: () => act('cancel', `Cancel op ${o.id}?`) }, 'Cancel') : null),
    out,
    h('h2', {}, 'Payload'),
    h('pre', { id: 'payload' }, o.payload_text || '{}'),
    h('p', {}, h('a', { href: '#/ops' }, '← Ops')));
}

export async function opsEnqueue() {
  const type = h('input', { name: 'type', id: 'e-type', required: true, maxlength: 255 });
  const payload = h('textarea', { name: 'payload', id: 'e-payload', rows: 6, cols: 60 }, '{}');
  const priority = h('input', { name: 'priority', id: 'e-priority', type: 'number', value: 0 });
  const out = h('div', {});
  const form = h('form', { id: 'enqueue', class: 'login' },
    h('h1', {}, 'Enqueue an op'),
    h('label', {}, 'Type', type), h('label', {}, 'Payload (a JSON object)', payload), h('label', {}, 'Priority', priority),
    out, h('button', { type: 'submit', class: 'primary' }, 'Enqueue'));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    let body;
    try {
      body = JSON.parse(payload.value || '{}');
    } catch {
      out.replaceChildren(status('The payload is not valid JSON.', true));
      return;
    }
    if ((await confirmAction(`Enqueue an op of type ${type.value}?`, { label: 'Enqueue' })) === null) return;
    try {
      const r = await post('ops/enqueue', { type: type.value, payload: body, priority: Number(priority.value) || 0 });
      go('ops/op', { id: r.id });
    } catch (err) {
      out.replaceChildren(status(err.message, true));
    }
  });
  show(form);
}
