// A queue's quarantine (the rows queue_messages_failed holds, with the reason
// each was set aside), narrowed by group, id prefix and a part of the reason;
// one quarantined row; and redrive of the selected rows, of one, or of all
// that match (audited with the console user and the reason entered).
import { get, post } from '../api.js';
import { h, show, table, fields, confirmAction, status } from '../dom.js';
import { go, session } from '../nav.js';
import { pager } from './pager.js';

const filterNames = ['group', 'id_prefix', 'reason'];

function filterForm(p) {
  const input = (name, label, attrs = {}) =>
    h('label', {}, label, h('input', { name, id: `fq-${name}`, value: p[name] || '', ...attrs }));
  const form = h('form', { class: 'filters', id: 'quarantine-filters' },
    input('group', 'Group', { maxlength: 128 }),
    input('id_prefix', 'Id starts with', { maxlength: 200 }),
    input('reason', 'Reason contains', { maxlength: 500 }),
    h('button', { type: 'submit', class: 'primary' }, 'Filter'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    go('mq/quarantine', { queue: p.queue, ...Object.fromEntries(new FormData(form)) });
  });
  return form;
}

// ids, or every row the filter matches when all (the server redrives up to
// 1,000 matching rows a call, so this calls until none is left).
async function redrive(queue, ids, all, filter = {}) {
  const narrowed = filterNames.some((k) => filter[k]);
  const what = !all ? `${ids.length} row(s) of ${queue}`
    : narrowed ? `every quarantined row of ${queue} that the filter matches` : `every quarantined row of ${queue}`;
  const reason = await confirmAction(`Redrive ${what} back to the queue?`, { askReason: true, label: 'Redrive' });
  if (reason === null) return null;
  if (!all) return post('mq/redrive', { queue, ids, reason });
  const body = { queue, all: true, reason, group: filter.group || undefined, id_prefix: filter.id_prefix || undefined,
    reason_contains: filter.reason || undefined };
  const total = { redriven: [], conflicts: [], missing: [] };
  for (;;) {
    const r = await post('mq/redrive', body);
    for (const k of Object.keys(total)) total[k].push(...r[k]);
    if (!r.more || !r.redriven.length) return total;
  }
}

function redriveOutcome(r) {
  const parts = [`${r.redriven.length} redriven`];
  if (r.conflicts.length) parts.push(`${r.conflicts.length} kept (a live message holds the id)`);
  if (r.missing.length) parts.push(`${r.missing.length} not in quarantine`);
  return parts.join(', ');
}

export async function mqQuarantine(p) {
  const filter = Object.fromEntries(filterNames.map((k) => [k, p[k]]));
  const page = await get('mq/quarantined', { queue: p.queue, ...filter, after: p.after, limit: p.limit || 50 });
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
      const r = await redrive(p.queue, ids, all, filter);
      if (r) {
        await mqQuarantine(p);
        document.getElementById('main').prepend(status(redriveOutcome(r)));
      }
    } catch (e) {
      out.replaceChildren(status(e.message, true));
    }
  };
  const narrowed = filterNames.some((k) => filter[k]);
  show(
    h('h1', {}, `Quarantined rows of ${p.queue}`),
    filterForm(p),
    readOnly ? null : h('div', { class: 'actions' },
      h('button', { type: 'button', id: 'redrive-selected', onclick: () => act(false) }, 'Redrive selected'),
      h('button', { type: 'button', id: 'redrive-all', onclick: () => act(true) }, narrowed ? 'Redrive all that match' : 'Redrive all')),
    out,
    page.rows.length
      ? table([
        ['', (q) => {
          const box = h('input', { type: 'checkbox', 'aria-label': `select ${q.id}`, value: q.id });
          boxes.set(q.id, box);
          return readOnly ? '' : box;
        }],
        ['Id', (q) => h('a', { href: `#/mq/quarantined?queue=${encodeURIComponent(q.queue)}&id=${encodeURIComponent(q.id)}` }, q.id)],
        ['Group', (q) => q.group ?? '—'],
        ['Reason', (q) => q.error_message],
        ['Receives', (q) => q.receive_count ?? '—', 'num'],
        ['Failed at', (q) => q.failed_at],
      ], page.rows, { id: 'quarantined' })
      : h('p', { class: 'muted', id: 'quarantine-empty' }, narrowed ? 'No quarantined row matches.' : 'The quarantine is empty.'),
    pager(`q:${JSON.stringify({ queue: p.queue, ...filter })}`, p.after, page.next,
      (after) => go('mq/quarantine', { queue: p.queue, ...filter, after })),
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
