// The console's entry: the session, the login form, and the router from the
// URL's hash (#/section?filters) to a view. Each view renders into <main>
// and may return a stop function (the overview's live refresh).
import { get, post, setSession, ApiError } from './api.js';
import { h, show } from './dom.js';
import { overview } from './views/overview.js';
import { mqMessages, mqMessage } from './views/mq.js';
import { mqQuarantine, mqQuarantined } from './views/quarantine.js';
import { opsList, opsOne, opsEnqueue } from './views/ops.js';
import { outboxList, outboxEnvelope } from './views/outbox.js';
import { session, parseHash } from './nav.js';

const routes = {
  '': overview,
  mq: mqMessages,
  'mq/message': mqMessage,
  'mq/quarantine': mqQuarantine,
  'mq/quarantined': mqQuarantined,
  ops: opsList,
  'ops/op': opsOne,
  'ops/enqueue': opsEnqueue,
  outbox: outboxList,
  'outbox/envelope': outboxEnvelope,
};

let stopView = null;
// Routes run one after another: a slow view that finishes after the operator
// moved on must not overwrite the newer page, and its live refresh must be
// stopped by the next route rather than leak.
let routing = Promise.resolve();

function markNav(path) {
  const section = path.split('/')[0];
  for (const a of document.querySelectorAll('#nav a')) {
    const target = a.getAttribute('href').replace(/^#\/?/, '');
    if (target === section) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
}

function route() {
  routing = routing.then(renderRoute, renderRoute);
  return routing;
}

// <main data-rendered> names the hash whose view finished rendering, and
// aria-busy says a view is on its way: readers (and tests) know which page
// they are looking at rather than guessing from what happens to be shown.
async function renderRoute() {
  const main = document.getElementById('main');
  const hash = location.hash;
  delete main.dataset.rendered;
  main.setAttribute('aria-busy', 'true');
  if (stopView) stopView();
  stopView = null;
  if (!session.current) {
    main.removeAttribute('aria-busy');
    return;
  }
  const { path, params } = parseHash();
  const view = routes[path];
  markNav(path);
  if (!view) {
    show(h('h1', {}, 'Not found'), h('p', {}, 'No such page. '), h('a', { href: '#/' }, 'Overview'));
  } else {
    try {
      stopView = (await view(params)) || null;
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) return start();
      show(h('h1', {}, 'Error'), h('p', { class: 'error', role: 'alert' }, e.message));
    }
  }
  if (location.hash === hash) {
    main.removeAttribute('aria-busy');
    main.dataset.rendered = hash;
  }
}

function loginForm(failure) {
  const token = h('input', { type: 'password', name: 'token', id: 'login-token', required: true, autocomplete: 'current-password' });
  const user = h('input', { name: 'user', id: 'login-user', maxlength: 64, autocomplete: 'username' });
  const error = h('p', { class: 'error', role: 'alert', id: 'login-error' }, failure || '');
  const form = h('form', { class: 'login', id: 'login' },
    h('h1', {}, 'Log in'),
    h('label', {}, 'Your name (recorded in audits)', user),
    h('label', {}, 'Console token', token),
    error,
    h('button', { class: 'primary', type: 'submit' }, 'Log in'));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    try {
      const s = await post('login', { token: token.value, user: user.value });
      enter(s);
    } catch (err) {
      error.textContent = err.code === 'login_failed' ? 'Wrong token.' : err.message;
    }
  });
  show(form);
  token.focus();
}

function enter(s) {
  session.current = s;
  setSession(s);
  document.getElementById('nav').hidden = false;
  const who = document.getElementById('who');
  who.replaceChildren(`${s.user} · ${s.engine}${s.read_only ? ' · read-only' : ''} `);
  if (s.login_required) {
    who.append(h('button', { type: 'button', id: 'logout', onclick: async () => {
      await post('logout');
      session.current = null;
      document.getElementById('nav').hidden = true;
      who.replaceChildren();
      loginForm();
    } }, 'Log out'));
  }
  route();
}

async function start() {
  session.current = null;
  const s = await get('session');
  if (s.authenticated) enter(s);
  else loginForm();
}

window.addEventListener('hashchange', route);
start().catch((e) => show(h('p', { class: 'error', role: 'alert' }, e.message)));
