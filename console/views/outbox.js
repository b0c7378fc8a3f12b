// The outbox's pages: envelopes filtered by state, topic, ordering key, id
// prefix and age, newest first, with the audited replay of dead or delivered
// envelopes and the prune of old ones; and one envelope with its payload,
// metadata and replay history.
import { get, post } from '../api.js';
import { h, show, table, fields, confirmAction, status } from '../dom.js';
import { go, session } from '../nav.js';
import { pager } from './pager.js';

const states = ['', 'pending', 'leased', 'delivered', 'dead'];
const units = [['s', 1], ['min', 60], ['h', 3600], ['d', 86400]];
const filterNames = ['state', 'topic', 'key', 'id_prefix', 'older_than'];

function filtersOf(p) {
  return Object.fromEntries(filterNames.filter((k) => p[k]).map((k) => [k, p[k]]));
}

async function replayIds(ids) {
  const reason = await confirmAction(`Replay ${ids.length} envelope(s)? They are delivered again.`, { needReason: true, label: 'Replay' });
  if (reason === null) return null;
  return post('outbox/replay', { ids, reason });
}

export async function outboxList(p) {
  const page = await get('outbox/list', { ...filtersOf(p), before: p.before, limit: p.limit || 50 });
  const readOnly = session.current.read_only;
  const state = h('select', { name: 'state', id: 'f-state' },
    states.map((s) => h('option', { value: s, selected: s === (p.state || '') }, s || 'any')));
  const topic = h('input', { name: 'topic', id: 'f-topic', value: p.topic || '', maxlength: 255 });
  const key = h('input', { name: 'key', id: 'f-key', value: p.key || '', maxlength: 255 });
  const prefix = h('input', { name: 'id_prefix', id: 'f-prefix', value: p.id_prefix || '', maxlength: 255 });
  const seconds = Number(p.older_than || 0);
  const [unit, per] = units.slice().reverse().find(([, n]) => seconds && seconds % n === 0) || ['min', 60];
  const ageValue = h('input', { id: 'f-age', type: 'number', min: 0, value: seconds ? seconds / per : '', 'aria-label': 'older than' });
  const ageUnit = h('select', { id: 'f-age-unit', 'aria-label': 'unit' },
    units.map(([u, n]) => h('option', { value: n, selected: u === unit }, u)));
  const form = h('form', { class: 'filters', id: 'filters' }, h('label', {}, 'State', state), h('label', {}, 'Topic', topic),
    h('label', {}, 'Ordering key', key), h('label', {}, 'Id starts with', prefix),
    h('label', {}, 'Older than', ageValue, ageUnit),
    h('button', { type: 'submit', class: 'primary' }, 'Filter'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const age = ageValue.value ? Math.round(Number(ageValue.value) * Number(ageUnit.value)) : '';
    go('outbox', { state: state.value, topic: topic.value, key: key.value, id_prefix: prefix.value, older_than: age || '' });
  });
  const boxes = new Map();
  const out = h('div', {});
  const replay = async () => {
    const ids = [...boxes].filter(([, b]) => b.checked).map(([id]) => id);
    if (!ids.length) return out.replaceChildren(status('Select envelopes first.', true));
    try {
      const r = await replayIds(ids);
      if (r === null) return undefined;
      await outboxList(p);
      document.getElementById('main').prepend(status(`Replayed ${r.items.length} envelope(s) (replay ${r.replay_id}).`));
    } catch (e) {
      out.replaceChildren(status(e.message, true));
    }
    return undefined;
  };
  const pruneState = h('select', { id: 'p-state' }, h('option', { value: 'delivered' }, 'delivered'), h('option', { value: 'dead' }, 'dead'));
  const pruneBefore = h('input', { id: 'p-before', type: 'date', required: true });
  const prune = async (e) => {
    e.preventDefault();
    if (!pruneBefore.value) return;
    const before = `${pruneBefore.value}T00:00:00Z`;
    if ((await confirmAction(`Delete every ${pruneState.value} envelope older than ${before}?`, { label: 'Prune' })) === null) return;
    try {
      const r = await post('outbox/prune', { state: pruneState.value, before });
      out.replaceChildren(status(`Pruned ${r.pruned} envelope(s).`));
    } catch (err) {
      out.replaceChildren(status(err.message, true));
    }
  };
  show(
    h('h1', {}, 'Outbox'),
    form,
    readOnly ? null : h('div', { class: 'actions' },
      h('button', { type: 'button', id: 'replay', onclick: replay }, 'Replay selected…'),
      h('form', { class: 'filters', id: 'prune', onsubmit: prune }, h('label', {}, 'Prune', pruneState),
        h('label', {}, 'older than', pruneBefore), h('button', { type: 'submit', class: 'danger' }, 'Prune…'))),
    out,
    page.envelopes.length
      ? table([
        ['', (m) => {
          const box = h('input', { type: 'checkbox', 'aria-label': `select ${m.id}`, value: m.id });
          boxes.set(m.id, box);
          return readOnly ? '' : box;
        }],
        ['Id', (m) => h('a', { href: `#/outbox/envelope?id=${encodeURIComponent(m.id)}` }, m.id)],
        ['Topic', (m) => m.topic],
        ['State', (m) => m.state],
        ['Key', (m) => m.ordering_key],
        ['Claims', (m) => m.claim_count, 'num'],
        ['Failures', (m) => m.failure_count, 'num'],
        ['Created', (m) => m.created_at],
        ['Lease owner', (m) => m.lease_owner ?? ''],
        ['Last error', (m) => m.last_error ?? ''],
      ], page.envelopes, { id: 'envelopes' })
      : h('p', { class: 'muted', id: 'envelopes-empty' }, 'No envelope matches.'),
    pager(`outbox:${JSON.stringify(filtersOf(p))}`, p.before, page.next,
      (before) => go('outbox', { ...filtersOf(p), before })));
}

export async function outboxEnvelope(p) {
  const m = await get('outbox/envelope', { id: p.id });
  const out = h('div', {});
  const replayable = (m.state === 'dead' || m.state === 'delivered') && !session.current.read_only;
  const replay = async () => {
    try {
      const r = await replayIds([m.id]);
      if (r === null) return;
      await outboxEnvelope(p);
      document.getElementById('main').prepend(status(`Replayed (replay ${r.replay_id}): the envelope is pending again.`));
    } catch (e) {
      out.replaceChildren(status(e.message, true));
    }
  };
  const meta = Object.entries(m.metadata || {});
  show(
    h('h1', {}, 'Envelope'),
    fields([['Id', m.id], ['State', m.state], ['Topic', m.topic], ['Ordering key', m.ordering_key],
      ['Idempotency key', m.idempotency_key], ['Claims', m.claim_count === undefined ? null : String(m.claim_count)],
      ['Failures', m.failure_count === undefined ? null : String(m.failure_count)], ['Available at', m.available_at],
      ['Created', m.created_at], ['Updated', m.updated_at], ['Lease owner', m.lease_owner], ['Leased until', m.leased_until],
      ['Delivered', m.delivered_at], ['Dead-lettered', m.dead_lettered_at], ['Last error code', m.last_error_code],
      ['Last error', m.last_error], ['Payload version', m.payload_version === undefined ? null : String(m.payload_version)],
      ['Payload bytes', m.payload_bytes === undefined ? null : String(m.payload_bytes)]]),
    replayable ? h('div', { class: 'actions' }, h('button', { type: 'button', id: 'replay-one', onclick: replay }, 'Replay…')) : null,
    out,
    m.state === 'pruned' ? h('p', { class: 'notice', id: 'pruned' }, 'This envelope was pruned; its replay audit remains.') : null,
    m.payload === undefined ? null : h('h2', {}, m.payload_json ? 'Payload' : 'Payload (not JSON: the raw text)'),
    m.payload === undefined ? null : h('pre', { id: 'payload' }, m.payload),
    m.metadata === undefined ? null : h('h2', {}, 'Metadata'),
    m.metadata === undefined ? null : (meta.length
      ? table([['Key', ([k]) => k], ['Value', ([, v]) => v]], meta, { id: 'metadata' })
      : h('p', { class: 'muted', id: 'metadata-empty' }, 'No metadata.')),
    h('h2', {}, 'Replay history'),
    m.replays.length
      ? table([
        ['Requested', (a) => a.requested_at],
        ['By', (a) => a.requested_by],
        ['Reason', (a) => a.reason],
        ['From state', (a) => a.previous_state],
        ['Available at', (a) => a.available_at],
        ['Replay id', (a) => a.replay_id],
      ], m.replays, { id: 'replays' })
      : h('p', { class: 'muted', id: 'replays-empty' }, 'Never replayed.'),
    h('p', {}, h('a', { href: '#/outbox' }, '← Envelopes')));
}
