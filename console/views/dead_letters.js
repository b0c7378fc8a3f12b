// A dead-letter queue's messages back to the queues they came from: the
// selected ones, or every one the filter matches (the server moves up to
// 1,000 a call, so "all" is a loop of calls until none is left).
import { post } from '../api.js';
import { h, confirmAction, status } from '../dom.js';

function outcome(t) {
  const parts = [`${t.redriven} redriven`];
  if (t.in_flight) parts.push(`${t.in_flight} in flight (left to their consumer)`);
  if (t.unroutable) parts.push(`${t.unroutable} with no source queue to return to`);
  if (t.missing) parts.push(`${t.missing} gone meanwhile`);
  return `${parts.join(', ')}.`;
}

// sources: the queues whose RedrivePolicy names this one. rerender draws the
// page again after a redrive. Returns the checkbox of a row and the notice
// with the actions (no actions when readOnly).
export function deadLetters(queue, sources, filters, readOnly, rerender) {
  const boxes = new Map();
  const out = h('div', {});
  const run = async (all) => {
    const ids = [...boxes].filter(([, box]) => box.checked).map(([id]) => id);
    if (!all && !ids.length) {
      out.replaceChildren(status('Select messages first.', true));
      return;
    }
    const what = all ? `every message of ${queue} that the filter matches` : `${ids.length} selected message(s)`;
    if ((await confirmAction(`Move ${what} back to the queue each came from (${sources.join(', ')})?`, { label: 'Redrive' })) === null) return;
    const body = all
      ? { queue, all: true, group: filters.group || undefined, id_prefix: filters.id_prefix || undefined,
          min_age: filters.min_age ? Number(filters.min_age) : undefined }
      : { queue, ids };
    const total = { redriven: 0, in_flight: 0, unroutable: 0, missing: 0 };
    try {
      for (;;) {
        const r = await post('mq/redrive_dead_letters', body);
        for (const k of Object.keys(total)) total[k] += r[k].length;
        if (!r.more || !r.redriven.length) break;
        out.replaceChildren(status(`${total.redriven} redriven so far…`));
      }
      await rerender();
      document.getElementById('main').prepend(status(outcome(total)));
    } catch (e) {
      out.replaceChildren(status(e.message, true));
    }
  };
  return {
    box(m) {
      if (readOnly) return '';
      const box = h('input', { type: 'checkbox', 'aria-label': `select ${m.id}`, value: m.id });
      boxes.set(m.id, box);
      return box;
    },
    actions: h('div', { id: 'dead-letters' },
      h('p', { class: 'notice' }, `The dead-letter queue of ${sources.join(', ')}.`),
      readOnly ? null : h('div', { class: 'actions' },
        h('button', { type: 'button', id: 'dlq-redrive-selected', onclick: () => run(false) }, 'Redrive selected to their source'),
        h('button', { type: 'button', id: 'dlq-redrive-matching', onclick: () => run(true) }, 'Redrive all that match to their source')),
      out),
  };
}
