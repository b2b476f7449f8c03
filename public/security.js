// The Security page's passkey controls (`ui/security_page.rs`): register passkeys, list them, remove one. With a passkey registered,
// adding or removing one first asks for it (a stolen token alone cannot add its own).
'use strict';
(function () {
  const $ = (id) => document.getElementById(id);
  const status = (text, problem) => {
    const el = $('passkey-status');
    el.textContent = text;
    el.dataset.problem = problem ? 'true' : 'false';
  };

  async function list() {
    const response = await fetch('/api/v1/passkeys', { credentials: 'same-origin' });
    if (!response.ok) throw `cannot list passkeys (HTTP ${response.status})`;
    return response.json();
  }

  async function refresh() {
    const keys = await list();
    const ul = $('passkey-list');
    ul.replaceChildren(...keys.map((k) => {
      const li = document.createElement('li');
      li.dataset.testid = 'passkey';
      li.dataset.id = k.id;
      const used = k.last_used_at ? `last used ${k.last_used_at}` : 'never used';
      li.append(`${k.name} · ${k.rp_id} · added ${k.created_at} · ${used} `);
      const remove = document.createElement('button');
      remove.type = 'button';
      remove.className = 'small danger';
      remove.textContent = 'Remove';
      remove.dataset.testid = 'passkey-remove';
      remove.addEventListener('click', guard(async () => {
        const proof = await window.countersignPasskeys.manage({ change: 'remove', id: k.id });
        await window.countersignPasskeys.remove(k.id, proof);
        await refresh();
        status(`Removed the passkey “${k.name}”.`);
      }));
      li.append(remove);
      return li;
    }));
    $('passkey-none').hidden = keys.length > 0;
    return keys;
  }

  function guard(fn) {
    return () => fn().catch((err) => status(window.countersignWords ? window.countersignWords(err) : String(err), true));
  }

  function start() {
    if (!window.countersignPasskeys || !window.countersignPasskeys.supported()) {
      status('This browser cannot use passkeys (WebAuthn).', true);
      $('passkey-add').disabled = true;
    }
    $('passkey-add').addEventListener('click', guard(async () => {
      const name = $('passkey-name').value.trim();
      if (!name) { status('Give the passkey a name first (e.g. “phone”).', true); return; }
      const keys = await list();
      const proof = keys.length > 0 ? await window.countersignPasskeys.manage({ change: 'add', name }) : null;
      await window.countersignPasskeys.register(name, proof);
      $('passkey-name').value = '';
      await refresh();
      status(`Registered the passkey “${name}”.`);
    }));
    guard(async () => { await refresh(); status(''); })();
    document.body.dataset.ready = 'true';
  }

  // The page is the app's: this script may run before or after the document is parsed.
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
