// Keyset paging: the URL holds the cursor of the page shown (`after`); the
// cursors of the pages before it are kept here, per list, for "Previous".
import { h } from '../dom.js';

const stacks = new Map();

// A pager for the list named key: next is the page's `next` cursor (null at
// the end); go(after) shows the page that starts after that cursor.
export function pager(key, after, next, go) {
  const stack = stacks.get(key) || [];
  stacks.set(key, stack);
  if (!after) stack.length = 0;
  const prev = h('button', { type: 'button', id: 'page-prev', disabled: !after }, '← Previous');
  prev.addEventListener('click', () => go(stack.pop() || ''));
  const more = h('button', { type: 'button', id: 'page-next', disabled: !next }, 'Next →');
  more.addEventListener('click', () => {
    stack.push(after || '');
    go(next);
  });
  return h('div', { class: 'pager' }, prev, more, after ? h('span', { class: 'muted' }, `after ${after}`) : null);
}
