// The outbox's page: envelopes by state and topic, newest first, with the
// audited replay of dead or delivered envelopes and the prune of old ones.
import { get, post } from '../api.js';
import { h, show, table, confirmAction, status } from '../dom.js';
import { go, session } from '../nav.js';
import { pager } from './pager.js';

const states = ['', 'pending', 'leased', 'delivered', 'dead'];

export async function outboxList(p) {
  const page = await get('outbox/list', { state: p.state, topic: p.topic, before: p.before, limit: p.limit || 50 });
  const readOnly = session.current.read_only;
  const state = h('select', { name: 'state', id: 'f-state' },
    states.map((s) => h('option', { value: s, selected: s === (p.state || '') }, s || 'any')));
  const topic = h('input', { name: 'topic', id: 'f-topic', value: p.topic || '', maxlength: 255 });
  const form = h('form', { class: 'filters', id: 'filters' }, h('label', {}, 'State', state), h('label', {}, 'Topic', topic),
    h('button', { type: 'submit', class: 'primary' }, 'Filter'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    go('outbox', { state: state.value, topic: topic.value });
  });
  const boxes = new Map();
  const out = h('div', {});
  const replay = async () => {
    const ids = [...boxes].filter(([, b]) => b.checked).map(([id]) => id);
    if (!ids.length) return out.replaceChildren(status('Select envelopes first.', true));
    const reason = await confirmAction(`Replay ${ids.length} envelope(s)? They are delivered again.`, { needReason: true, label: 'Replay' });
    if (reason === null) return undefined;
    try {
      const r = await post('outbox/replay', { ids, reason });
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
        ['Id', (m) => m.id],
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
    pager(`outbox:${p.state || ''}:${p.topic || ''}`, p.before, page.next,
      (before) => go('outbox', { state: p.state, topic: p.topic, before })));
}
