// The console's shared state: the session, and moving between pages (the
// URL's hash holds the page and its filters, so every page has an address).
export const session = { current: null };

export function parseHash() {
  const hash = location.hash.replace(/^#\/?/, '');
  const [path, query = ''] = hash.split('?');
  return { path, params: Object.fromEntries(new URLSearchParams(query)) };
}

export function go(path, params = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, v);
  const qs = q.toString();
  location.hash = `#/${path}${qs ? '?' + qs : ''}`;
}
