// DOM helpers. Everything shown is set as text, never as HTML: payloads and
// error messages come from other systems.
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// A table of rows: columns are [header, (row) => cell, className?].
export function table(columns, rows, attrs = {}) {
  return h('table', attrs,
    h('thead', {}, h('tr', {}, columns.map(([title, , cls]) => h('th', { class: cls, scope: 'col' }, title)))),
    h('tbody', {}, rows.map((r) => h('tr', {}, columns.map(([, cell, cls]) => h('td', { class: cls }, cell(r)))))));
}

export function fields(pairs) {
  return h('dl', { class: 'fields' }, pairs.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v ?? '—')]));
}

export function show(...nodes) {
  const main = document.getElementById('main');
  // Views pass null for a part that does not apply (an action a state has
  // not): replaceChildren would print it as the text "null".
  main.replaceChildren(...nodes.flat().filter((n) => n !== null && n !== undefined && n !== false));
}

export function age(seconds) {
  if (seconds === null || seconds === undefined) return '—';
  const s = Math.round(seconds);
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  if (s < 172800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} d`;
}

// Asks before an action. With needReason the operator must type a reason.
// Resolves to the reason ('' when none is asked), or null when cancelled.
export function confirmAction(text, { needReason = false, askReason = false, label = 'Confirm', inputLabel = 'Reason' } = {}) {
  const dialog = document.getElementById('confirm');
  const reason = document.getElementById('confirm-reason');
  const reasonLabel = document.getElementById('confirm-reason-label');
  const error = document.getElementById('confirm-error');
  const ok = document.getElementById('confirm-ok');
  document.getElementById('confirm-text').textContent = text;
  reasonLabel.hidden = !(needReason || askReason);
  document.getElementById('confirm-reason-text').textContent = inputLabel;
  reason.value = '';
  reason.required = needReason;
  error.textContent = '';
  ok.textContent = label;
  return new Promise((resolve) => {
    const done = (value) => {
      dialog.close();
      ok.removeEventListener('click', onOk);
      document.getElementById('confirm-cancel').removeEventListener('click', onCancel);
      dialog.removeEventListener('cancel', onCancel);
      resolve(value);
    };
    const onOk = (e) => {
      e.preventDefault();
      if (needReason && !reason.value.trim()) {
        error.textContent = `${inputLabel === 'Reason' ? 'A reason' : inputLabel} is required.`;
        reason.focus();
        return;
      }
      done(reason.value.trim());
    };
    const onCancel = (e) => {
      e.preventDefault();
      done(null);
    };
    ok.addEventListener('click', onOk);
    document.getElementById('confirm-cancel').addEventListener('click', onCancel);
    dialog.addEventListener('cancel', onCancel);
    dialog.showModal();
    (needReason || askReason ? reason : ok).focus();
  });
}

// A line that reports an action's outcome or error, for tests and people.
export function status(text, isError = false) {
  return h('p', { class: isError ? 'error' : 'muted', role: 'status', id: 'status' }, text);
}
