// Countersign's service worker: shows a waiting card's push as a notification with Approve
// and Deny (ordinary cards) or only a link (cards on the safety floor), answers with the
// one-time capability the push carried, replaces the notification with the outcome, and shows
// an offline page when the server cannot be reached (its script reloads it as soon as the
// server answers). Nothing else is cached: no card is ever shown or answerable from a stale
// copy.
'use strict';

const OFFLINE_CACHE = 'countersign-offline-v2';
const OFFLINE_URL = '/offline.html';
/** The offline page's script: it polls the server and reloads the page once it answers. */
const OFFLINE_SCRIPT = '/offline.js';

self.addEventListener('install', (event) => {
  event.waitUntil(
    caches.open(OFFLINE_CACHE)
      .then((cache) => cache.addAll([OFFLINE_URL, OFFLINE_SCRIPT].map((url) => new Request(url, { cache: 'reload' }))))
      .then(() => self.skipWaiting()),
  );
});

self.addEventListener('activate', (event) => {
  event.waitUntil(
    caches.keys()
      .then((names) => Promise.all(names.filter((n) => n !== OFFLINE_CACHE).map((n) => caches.delete(n))))
      .then(() => self.clients.claim()),
  );
});

// Pages always come from the network; only when it fails does the offline page stand in
// (and its script, which the offline page needs while the server is away).
self.addEventListener('fetch', (event) => {
  const { pathname } = new URL(event.request.url);
  if (event.request.mode === 'navigate') {
    event.respondWith(
      fetch(event.request).catch(() => caches.match(OFFLINE_URL)
        .then((page) => page || new Response("Can't reach Countersign. Reload once it is back.", { status: 503 }))),
    );
  } else if (pathname === OFFLINE_SCRIPT) {
    event.respondWith(fetch(event.request).catch(() => caches.match(OFFLINE_SCRIPT)
      .then((script) => script || Response.error())));
  }
});

/** The notification a push asks for. */
function notificationFor(msg) {
  const options = {
    body: msg.body || '',
    tag: msg.tag || 'countersign',
    icon: '/icons/icon-192.png',
    badge: '/icons/icon-192.png',
    data: msg,
    renotify: msg.type === 'gate',
    requireInteraction: msg.type === 'gate',
  };
  if (msg.type === 'gate' && !msg.sensitive && !msg.needs_passkey && msg.capability) {
    options.actions = [
      { action: 'approve', title: 'Approve' },
      { action: 'deny', title: 'Deny' },
    ];
  }
  return { title: msg.title || 'Countersign', options };
}

async function show(msg) {
  const { title, options } = notificationFor(msg);
  await self.registration.showNotification(title, options);
  return { title, options };
}

self.addEventListener('push', (event) => {
  let msg;
  try {
    msg = event.data ? event.data.json() : {};
  } catch (_) {
    msg = { title: 'Countersign', body: 'A card may be waiting.', url: '/inbox' };
  }
  event.waitUntil(show(msg));
});

/** Why an answer was not taken, in words, from the server's error. */
function refusal(status, body) {
  const error = (body && body.error) || {};
  const resolution = error.resolution || (body && body.resolution);
  const changed = 'The card changed since this notification: open it to see it as it is now.';
  if (status === 409 && error.code === 'stale_digest') return changed;
  if (resolution && resolution.actor === 'stale') return changed;
  if (status === 409 || (status === 410 && resolution)) {
    const by = resolution ? ` (${resolution.decision} by ${resolution.actor || 'someone'})` : '';
    return `Already answered${by}.`;
  }
  if (status === 410) return error.message || 'This notification can no longer answer the card.';
  if (status === 403) return error.message || 'This card is answered on the card itself.';
  return error.message || `The server refused the answer (${status}).`;
}

/** Answers a card from its notification; returns what the notification then says. */
async function answer(msg, action) {
  let response;
  try {
    response = await fetch(`/api/v1/push/answers/${encodeURIComponent(msg.capability)}`, {
      method: 'POST',
      credentials: 'omit',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ decision: action }),
    });
  } catch (_) {
    return { ok: false, status: 0, text: 'The server cannot be reached: nothing was answered.' };
  }
  let body = null;
  try { body = await response.json(); } catch (_) { /* no body */ }
  if (response.ok) return { ok: true, status: response.status, text: body.outcome, body };
  return { ok: false, status: response.status, text: refusal(response.status, body), body };
}

/**
 * Where a tap opens: the push's `url` when it is a page of this origin, else the Inbox. A push
 * is only as trustworthy as whoever could send it: a forged one must not open another site
 * (`https://evil.example/login`, `//evil.example`, `javascript:`) in the app's window.
 */
function sameOrigin(url) {
  try {
    const target = new URL(url || '/inbox', self.location.origin);
    if (target.origin === self.location.origin) return target.href;
  } catch (_) { /* not a URL */ }
  return new URL('/inbox', self.location.origin).href;
}

async function openCard(url) {
  const target = sameOrigin(url);
  const open = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
  for (const client of open) {
    if ('focus' in client && new URL(client.url).origin === self.location.origin) {
      await client.navigate(target).catch(() => {});
      return client.focus();
    }
  }
  return self.clients.openWindow(target);
}

/** A tap on the notification (`action` '' for its body) or on one of its buttons. */
async function handleAction(msg, action) {
  if ((action === 'approve' || action === 'deny') && msg.type === 'gate' && msg.capability && !msg.sensitive) {
    const result = await answer(msg, action);
    await self.registration.showNotification(msg.headline || 'Countersign', {
      body: result.text,
      tag: msg.tag,
      icon: '/icons/icon-192.png',
      data: { type: 'answered', url: msg.url },
    });
    return result;
  }
  await openCard(msg.url);
  return { ok: true, status: 0, text: 'opened' };
}

self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  event.waitUntil(handleAction(event.notification.data || {}, event.action || ''));
});

// Test hook (the UI tests drive the same handlers a real push and a real tap run, since a
// headless browser has no push service): `{type: 'countersign-test-push', msg}` shows a
// push's notification; `{type: 'countersign-test-action', msg, action}` taps it. The answer
// goes back on the message's port. Only this origin's pages can post to this worker.
self.addEventListener('message', (event) => {
  const data = event.data || {};
  const port = event.ports && event.ports[0];
  const reply = (value) => port && port.postMessage(value);
  if (data.type === 'countersign-test-push') {
    event.waitUntil(show(data.msg).then(async ({ title, options }) => {
      const shown = await self.registration.getNotifications({ tag: options.tag });
      reply({ title, actions: (options.actions || []).map((a) => a.action), shown: shown.length });
    }, (err) => reply({ error: String(err) })));
  } else if (data.type === 'countersign-test-action') {
    event.waitUntil(handleAction(data.msg, data.action).then(reply, (err) => reply({ error: String(err) })));
  }
});
