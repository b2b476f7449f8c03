// The "Notify this device" page's controls (`ui/notify_page.rs`): subscribe this browser to Web Push for the credential it is
// logged in with, send a test, stop. The subscription's id is kept in this browser
// (localStorage) to find it again; the server keeps the rest.
'use strict';
(function () {
  const ID_KEY = 'countersign-push-subscription';
  const $ = (id) => document.getElementById(id);
  const status = (text, problem) => {
    const el = $('push-status');
    el.textContent = text;
    el.dataset.problem = problem ? 'true' : 'false';
  };

  function keyBytes(b64url) {
    const b64 = b64url.replace(/-/g, '+').replace(/_/g, '/') + '==='.slice((b64url.length + 3) % 4);
    return Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  }

  async function api(method, path, body) {
    const response = await fetch(path, {
      method,
      credentials: 'same-origin',
      headers: body ? { 'Content-Type': 'application/json' } : {},
      body: body ? JSON.stringify(body) : undefined,
    });
    let json = null;
    try { json = await response.json(); } catch (_) { /* 204 */ }
    if (!response.ok) throw new Error((json && json.error && json.error.message) || `HTTP ${response.status}`);
    return json;
  }

  function supported() {
    return 'serviceWorker' in navigator && 'PushManager' in window && 'Notification' in window;
  }

  async function registration() {
    await navigator.serviceWorker.register('/sw.js', { scope: '/' });
    return navigator.serviceWorker.ready;
  }

  /** The browser's subscription. UI tests stand a function in for the push service
   * (`window.countersignTestSubscribe`), which a headless browser does not have. */
  async function browserSubscription(reg, applicationServerKey) {
    const options = { userVisibleOnly: true, applicationServerKey };
    if (typeof window.countersignTestSubscribe === 'function') {
      return window.countersignTestSubscribe(options);
    }
    const sub = await reg.pushManager.subscribe(options);
    return sub.toJSON();
  }

  async function refresh() {
    const id = localStorage.getItem(ID_KEY);
    const mine = await api('GET', '/api/v1/push/subscriptions');
    const here = mine.find((s) => s.id === id);
    $('push-on').hidden = !!here;
    $('push-test').hidden = !here;
    $('push-off').hidden = !here;
    const list = $('push-list');
    list.replaceChildren(...mine.map((s) => {
      const li = document.createElement('li');
      li.dataset.testid = 'push-subscription';
      li.textContent = `${s.push_service} · ${s.credential} · since ${s.created_at}${s.id === id ? ' (this device)' : ''}`;
      return li;
    }));
    if (!here && id) localStorage.removeItem(ID_KEY);
    return here;
  }

  async function subscribe() {
    status('Asking this browser for permission…');
    const permission = await Notification.requestPermission();
    if (permission !== 'granted') {
      status('Notifications are blocked for this site: allow them in the browser\'s site settings, then try again.', true);
      return;
    }
    const reg = await registration();
    const { public_key: key } = await api('GET', '/api/v1/push/key');
    const sub = await browserSubscription(reg, keyBytes(key));
    const saved = await api('POST', '/api/v1/push/subscriptions', sub);
    localStorage.setItem(ID_KEY, saved.id);
    await refresh();
    status('This device will be notified when a card waits for you.');
  }

  async function test() {
    const id = localStorage.getItem(ID_KEY);
    const result = await api('POST', `/api/v1/push/subscriptions/${encodeURIComponent(id)}/test`);
    status(result.delivered ? 'Test sent: a notification should appear.' : `Test not delivered: ${result.outcome}`, !result.delivered);
    await refresh();
  }

  async function unsubscribe() {
    const id = localStorage.getItem(ID_KEY);
    await api('DELETE', `/api/v1/push/subscriptions/${encodeURIComponent(id)}`);
    localStorage.removeItem(ID_KEY);
    try {
      const reg = await navigator.serviceWorker.getRegistration('/');
      const sub = reg && await reg.pushManager.getSubscription();
      if (sub) await sub.unsubscribe();
    } catch (_) { /* the server no longer sends to it either way */ }
    await refresh();
    status('This device is no longer notified.');
  }

  // In words (`window.countersignWords`, from passkey.js, where the page loads it): a failed
  // fetch says nothing was sent, never "TypeError: Failed to fetch".
  const words = (err) => {
    if (window.countersignWords) return window.countersignWords(err);
    if (err instanceof TypeError) return "Can't reach Countersign, so nothing was sent. Try again once it is back.";
    return String((err && err.message) || err);
  };
  const guard = (fn) => () => fn().catch((err) => status(words(err), true));

  function start() {
    if (!supported()) {
      status('This browser cannot receive push notifications. On an iPhone, add Countersign to the Home Screen first and open it from there.', true);
      $('push-on').disabled = true;
    }
    $('push-on').addEventListener('click', guard(subscribe));
    $('push-test').addEventListener('click', guard(test));
    $('push-off').addEventListener('click', guard(unsubscribe));
    guard(async () => {
      const here = await refresh();
      if (supported() && !here) status('This device is not notified yet.');
      else if (here) status('This device is notified when a card waits for you.');
    })();
    document.body.dataset.ready = 'true';
  }

  // The page is the app's: this script may run before or after the document is parsed.
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
