// WebAuthn for Countersign's pages: turns the server's ceremony options (base64url fields)
// into what navigator.credentials wants, and the browser's credential back into JSON.
//   window.countersignPasskey(sessionId, approvalId, answerJson) → JSON text {ceremony,
//     credential}: an assertion made for that card and that answer (`answerJson`: the
//     decision, edits, rule and mode the card then sends with it).
//   window.countersignPasskeys.{register(name, proof), remove(id, proof), manage(change)}: for
//     the Security page; `change` is {change: 'add', name} or {change: 'remove', id}.
// Rejections are strings a person can read.
'use strict';
(function () {
  function toBytes(b64url) {
    const b64 = String(b64url).replace(/-/g, '+').replace(/_/g, '/');
    const padded = b64 + '==='.slice((b64.length + 3) % 4);
    return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0)).buffer;
  }

  function toB64url(buffer) {
    const bytes = new Uint8Array(buffer);
    let text = '';
    for (const b of bytes) text += String.fromCharCode(b);
    return btoa(text).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  }

  /** Drops nulls (WebIDL refuses null for its enums and dictionaries). */
  function clean(value) {
    if (Array.isArray(value)) return value.map(clean);
    if (value && typeof value === 'object' && !(value instanceof ArrayBuffer)) {
      const out = {};
      for (const [k, v] of Object.entries(value)) if (v !== null && v !== undefined) out[k] = clean(v);
      return out;
    }
    return value;
  }

  function withIds(list) {
    return (list || []).map((c) => ({ ...c, id: toBytes(c.id) }));
  }

  function requestOptions(options) {
    const pk = clean(options.publicKey);
    pk.challenge = toBytes(pk.challenge);
    pk.allowCredentials = withIds(pk.allowCredentials);
    return { publicKey: pk };
  }

  function creationOptions(options) {
    const pk = clean(options.publicKey);
    pk.challenge = toBytes(pk.challenge);
    pk.user = { ...pk.user, id: toBytes(pk.user.id) };
    pk.excludeCredentials = withIds(pk.excludeCredentials);
    return { publicKey: pk };
  }

  function assertionJSON(cred) {
    const r = cred.response;
    return {
      id: cred.id,
      rawId: toB64url(cred.rawId),
      type: cred.type,
      response: {
        authenticatorData: toB64url(r.authenticatorData),
        clientDataJSON: toB64url(r.clientDataJSON),
        signature: toB64url(r.signature),
        userHandle: r.userHandle ? toB64url(r.userHandle) : null,
      },
      extensions: cred.getClientExtensionResults ? cred.getClientExtensionResults() : {},
    };
  }

  function registrationJSON(cred) {
    const r = cred.response;
    return {
      id: cred.id,
      rawId: toB64url(cred.rawId),
      type: cred.type,
      response: {
        attestationObject: toB64url(r.attestationObject),
        clientDataJSON: toB64url(r.clientDataJSON),
        transports: r.getTransports ? r.getTransports() : undefined,
      },
      extensions: cred.getClientExtensionResults ? cred.getClientExtensionResults() : {},
    };
  }

  async function post(path, body, method) {
    const response = await fetch(path, {
      method: method || 'POST',
      credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body || {}),
    });
    let json = null;
    try { json = await response.json(); } catch (_) { /* 204 */ }
    if (!response.ok) throw (json && json.error && json.error.message) || `HTTP ${response.status}`;
    return json;
  }

  /**
   * An error in words, never a developer's text ("TypeError: Failed to fetch"): the one
   * mapping the pages' scripts share (`window.countersignWords`), as `api::error_message` is
   * the bundle's. A fetch that failed reached nothing: it says nothing was sent.
   */
  function words(err) {
    if (typeof err === 'string') return err;
    if (err instanceof TypeError) return "Can't reach Countersign, so nothing was sent. Try again once it is back.";
    if (err && err.name === 'NotAllowedError') return 'the passkey prompt was dismissed or timed out';
    if (err && err.name === 'InvalidStateError') return 'this authenticator already holds a Countersign passkey';
    // Our own scripts throw plain Errors carrying the server's sentence.
    if (err && err.constructor === Error && err.message) return err.message;
    return 'Countersign could not do that just now. Try again.';
  }
  window.countersignWords = words;

  function supported() {
    return !!(window.PublicKeyCredential && navigator.credentials);
  }

  async function assert(path, body) {
    if (!supported()) throw 'this browser has no passkeys (WebAuthn)';
    try {
      const { options, ceremony } = await post(path, body);
      const cred = await navigator.credentials.get(requestOptions(options));
      return { ceremony, credential: assertionJSON(cred) };
    } catch (err) {
      throw words(err);
    }
  }

  window.countersignPasskey = async (sessionId, approvalId, answerJson) => JSON.stringify(await assert(
    `/api/v1/sessions/${encodeURIComponent(sessionId)}/approvals/${encodeURIComponent(approvalId)}/passkey`,
    JSON.parse(answerJson),
  ));

  window.countersignPasskeys = {
    supported,
    /** An assertion for one change: {change: 'add', name} or {change: 'remove', id}. */
    manage: (change) => assert('/api/v1/passkeys/assertions', change),
    /** Registers a passkey named `name`; `proof` is a manage() assertion when one exists. */
    async register(name, proof) {
      if (!supported()) throw 'this browser has no passkeys (WebAuthn)';
      try {
        const { options, ceremony } = await post('/api/v1/passkeys/registrations', { name, passkey: proof || null });
        const cred = await navigator.credentials.create(creationOptions(options));
        return await post('/api/v1/passkeys', { ceremony, credential: registrationJSON(cred) });
      } catch (err) {
        throw words(err);
      }
    },
    async remove(id, proof) {
      try {
        return await post(`/api/v1/passkeys/${encodeURIComponent(id)}`, { passkey: proof || null }, 'DELETE');
      } catch (err) {
        throw words(err);
      }
    },
  };
})();
