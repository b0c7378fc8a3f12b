// The console's calls to /console/api/ (docs/CONSOLE.md). Every action sends
// the session's CSRF token; a refusal becomes an ApiError with the server's
// code and message.
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message || code);
    this.status = status;
    this.code = code;
  }
}

let csrf = '';

export function setSession(session) {
  csrf = session && session.csrf ? session.csrf : '';
}

async function answer(res) {
  let body = null;
  try {
    body = await res.json();
  } catch {
    throw new ApiError(res.status, 'malformed_answer', `the server answered ${res.status} without JSON`);
  }
  if (!res.ok) throw new ApiError(res.status, body.error, body.message);
  return body;
}

// GET /console/api/<path>?<params>, params without empty values.
export async function get(path, params = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, v);
  const qs = q.toString();
  const res = await fetch(`/console/api/${path}${qs ? '?' + qs : ''}`, { credentials: 'same-origin' });
  return answer(res);
}

// POST /console/api/<path> with a JSON body and the CSRF token.
export async function post(path, body = {}) {
  const res = await fetch(`/console/api/${path}`, {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'Content-Type': 'application/json', 'X-Spool-CSRF': csrf },
    body: JSON.stringify(body),
  });
  return answer(res);
}
