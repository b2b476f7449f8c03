// Passkeys for step-up, end to end, with Chromium's virtual authenticator standing in for the
// person's device: a passkey registered on the Security page; with `approvals.require_passkey
// = "floor"` a floor card's Approve asks for it and the answer names it (event and audit);
// the API refuses a card's answer without an assertion, with one made for another card or
// another answer (made to deny, it cannot approve or edit), with one already spent (even after
// a restart), with an altered or expired ceremony, with one from another origin; adding or
// removing a passkey once one exists asks for it, with an assertion for that very change;
// `countersign passkey reset` removes them all; an `approve` token cannot open the Security
// page. WebAuthn needs a domain: the browser uses `localhost`.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { APIRequestContext, expect, Page } from '@playwright/test';
import { card, pendingCards, send, sessionId, test, toolResults, waitLive } from './helpers';
import { BIN, RunningServer } from './server';
import {
  answerFingerprint, assertionForCard, assertionToManage, Authenticator, challengeFor, clientData,
  createCredential, keepCeremony, openCeremony, sealedFromTheDataDir,
} from './webauthn';

const FLOOR = '[approvals]\nrequire_passkey = "floor"\n';

/** The server's address with a name, as WebAuthn needs (`server.url` is an IP address). */
function local(server: RunningServer): string {
  return server.url.replace('//127.0.0.1:', '//localhost:');
}

const bearer = (server: RunningServer) => ({ Authorization: `Bearer ${server.token}` });

/** Logs this page in on `localhost` (cookies are per host). */
async function loginLocal(page: Page, server: RunningServer) {
  await page.goto(`${local(server)}/login?token=${server.token}`);
  await expect(page).toHaveURL(/^http:\/\/localhost:\d+\/sessions\/[0-9a-f-]{36}$/);
  await waitLive(page);
}

async function openSecurity(page: Page, server: RunningServer) {
  await page.goto(`${local(server)}/security`);
  await expect(page.locator('body')).toHaveAttribute('data-ready', 'true');
}

function listed(page: Page) {
  return page.getByTestId('passkey-list').getByTestId('passkey');
}

/** Registers a passkey named `name` through the Security page (the page is on it after). */
async function registerOnPage(page: Page, server: RunningServer, name: string) {
  // Counted by the server: the page's list may not have rendered yet right after hydration.
  const before = (await passkeys(page.request, server)).length;
  await openSecurity(page, server);
  await expect(listed(page)).toHaveCount(before);
  await page.getByTestId('passkey-name').fill(name);
  await page.getByTestId('passkey-add').click();
  await expect(page.getByTestId('passkey-status')).toHaveText(`Registered the passkey “${name}”.`);
  await expect(page.getByTestId('passkey-status')).toHaveAttribute('data-problem', 'false');
  await expect(listed(page)).toHaveCount(before + 1);
}

async function passkeys(request: APIRequestContext, server: RunningServer): Promise<any[]> {
  const res = await request.get(`${server.url}/api/v1/passkeys`, { headers: bearer(server) });
  expect(res.status()).toBe(200);
  return res.json();
}

async function pending(request: APIRequestContext, server: RunningServer): Promise<any[]> {
  const res = await request.get(`${server.url}/api/v1/approvals`, { headers: bearer(server) });
  expect(res.status()).toBe(200);
  return res.json();
}

async function audit(request: APIRequestContext, server: RunningServer, action: string): Promise<any[]> {
  const res = await request.get(`${server.url}/api/v1/audit?action=${action}`, { headers: bearer(server) });
  expect(res.status()).toBe(200);
  return res.json();
}

/** Answers a card over the REST API with the startup token. */
async function decide(request: APIRequestContext, server: RunningServer, sid: string, aid: string, body: object) {
  const res = await request.post(`${server.url}/api/v1/sessions/${sid}/approvals/${aid}`, {
    headers: bearer(server), data: body,
  });
  let json: any = null;
  try { json = await res.json(); } catch { /* none */ }
  return { status: res.status(), body: json };
}

/** A pending card's id once it shows. */
async function openCard(page: Page, command: string): Promise<string> {
  const before = await pendingCards(page).count();
  await send(page, command);
  await expect(pendingCards(page)).toHaveCount(before + 1);
  return (await pendingCards(page).last().getAttribute('data-approval-id'))!;
}

test.describe('with require_passkey = "floor"', () => {
  test.use({ serverConfig: FLOOR });

  test('a passkey registered on the Security page approves a floor card on the page, and the answer names it', async ({ page, server }) => {
    await loginLocal(page, server);
    const session = page.url();
    const sid = sessionId(page);
    const device = await Authenticator.attach(page);

    await openSecurity(page, server);
    await expect(page.getByTestId('passkey-none')).toBeVisible();
    await expect(listed(page)).toHaveCount(0);
    await registerOnPage(page, server, 'laptop');
    await expect(listed(page).first()).toContainText('laptop · localhost · added');
    await expect(listed(page).first()).toContainText('never used');
    await expect(page.getByTestId('passkey-none')).toBeHidden();
    // The authenticator holds one credential for localhost; the server lists one
    // passkey and never its credential.
    const held = await device.credentials();
    expect(held).toHaveLength(1);
    expect(held[0]).toMatchObject({ rpId: 'localhost' });
    const keys = await passkeys(page.request, server);
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatchObject({ name: 'laptop', rp_id: 'localhost', last_used_at: null });
    expect(Object.keys(keys[0]).sort()).toEqual(['created_at', 'id', 'last_used_at', 'name', 'rp_id']);
    expect(JSON.stringify(keys)).not.toContain(held[0].credentialId);
    const registered = await audit(page.request, server, 'passkey_registered');
    expect(registered).toHaveLength(1);
    expect(registered[0]).toMatchObject({ actor: 'browser', subject: `passkey:${keys[0].id}`, detail: { name: 'laptop' } });

    // A floor card: Approve asks for the passkey, the authenticator answers, the card resolves.
    await page.goto(session);
    await waitLive(page);
    const id = await openCard(page, 'write .env: SECRET=1');
    const floorCard = card(page, id);
    await expect(floorCard).toHaveClass(/\bfloor\b/);
    // The person cannot be verified on the device (no PIN, no fingerprint): nothing is
    // answered, the card says why and stays answerable.
    await device.setUserVerified(false);
    await floorCard.locator('[data-action=approve]').click();
    await expect(floorCard.getByTestId('card-notice')).toHaveText('Not answered: the passkey prompt was dismissed or timed out');
    await expect(floorCard).toHaveAttribute('data-state', 'pending');
    await expect(floorCard.locator('[data-action=approve]')).toBeEnabled();
    expect(existsSync(join(server.workspace, '.env'))).toBe(false);
    // Verified, Approve again: the passkey prompt is answered and the card resolves.
    await device.setUserVerified(true);
    await floorCard.locator('[data-action=approve]').click();
    await expect(floorCard).toHaveAttribute('data-state', 'resolved');
    await expect(floorCard).toHaveAttribute('data-decision', 'approve');
    await expect(toolResults(page, 'ok')).toHaveCount(1);
    expect(readFileSync(join(server.workspace, '.env'), 'utf8')).toBe('SECRET=1');
    // It was the authenticator's passkey that signed (its counter moved).
    const after = await device.credentials();
    expect(after[0].signCount).toBeGreaterThan(held[0].signCount);

    // The resolution names the passkey, in the session's log and in the audit.
    const snap = await (await page.request.get(`${server.url}/api/v1/sessions/${sid}`, { headers: bearer(server) })).json();
    const resolved = snap.events.filter((e: any) => e.type === 'approval_resolved' && e.approval_id === id);
    expect(resolved).toHaveLength(1);
    expect(resolved[0]).toMatchObject({ decision: 'approve', actor: 'browser', passkey: 'laptop' });
    const entries = (await audit(page.request, server, 'gate_resolved')).filter((e) => e.subject === id);
    expect(entries).toHaveLength(1);
    expect(entries[0].detail).toMatchObject({ decision: 'approve', passkey: 'laptop', session_id: sid });
    // Its use is recorded.
    const used = await passkeys(page.request, server);
    expect(used[0].last_used_at).not.toBeNull();
  });

  test('the API refuses a floor card without an assertion, with one for another card, spent, altered or expired', async ({ page, server }) => {
    await loginLocal(page, server);
    const session = page.url();
    const sid = sessionId(page);
    await Authenticator.attach(page);
    await registerOnPage(page, server, 'laptop');
    await page.goto(session);
    await waitLive(page);

    // Two floor cards and an ordinary one wait together.
    await send(page, 'parallel:\nwrite .env: A=1\nwrite .env.b: B=2\nwrite notes/plain.md: hi');
    await expect(pendingCards(page)).toHaveCount(3);
    const waiting = await pending(page.request, server);
    const byPath = (path: string) => {
      const g = waiting.find((w) => w.args?.path === path);
      expect(g, `a card for ${path}`).toBeDefined();
      return { id: g.approval_id as string, digest: g.digest as string, reason: g.reason as string };
    };
    const a = byPath('.env');
    const b = byPath('.env.b');
    const plain = byPath('notes/plain.md');
    expect([a.reason, b.reason, plain.reason]).toEqual(['safety_floor', 'safety_floor', plain.reason]);
    expect(plain.reason).not.toBe('safety_floor');
    const stillPending = async (...ids: string[]) => {
      const now = (await pending(page.request, server)).map((g) => g.approval_id);
      for (const id of ids) expect(now, `${id} is still pending`).toContain(id);
    };
    const refused = (res: { status: number; body: any }, code: string, message?: RegExp) => {
      expect(res.status, JSON.stringify(res.body)).toBe(403);
      expect(res.body.error.code).toBe(code);
      if (message) expect(res.body.error.message).toMatch(message);
    };

    // No assertion: passkey_required, whether approving or denying; a half one is refused.
    refused(await decide(page.request, server, sid, a.id, { decision: 'approve', digest: a.digest }),
      'passkey_required', /require_passkey/);
    refused(await decide(page.request, server, sid, a.id, { decision: 'deny', digest: a.digest }), 'passkey_required');
    refused(await decide(page.request, server, sid, a.id, { decision: 'approve', digest: a.digest, passkey: { ceremony: 'pk1.x.y' } }),
      'passkey_refused');
    refused(await decide(page.request, server, sid, a.id, { decision: 'approve', digest: a.digest, passkey: { ceremony: 'pk1.x.y', credential: {} } }),
      'passkey_refused');
    // Nor does the page's no-script form answer it (it has no way to carry an assertion).
    const form = await page.request.post(`${local(server)}/forms/decide`, {
      form: { session_id: sid, approval_id: a.id, digest: a.digest, decision: 'approve', back: 'session' },
      maxRedirects: 0,
    });
    expect(form.status()).toBe(403);
    expect(await form.text()).toContain('data-code="passkey_required"');
    await stillPending(a.id, b.id);

    // The ordinary card is answered with the bearer token alone.
    const plainAnswer = await decide(page.request, server, sid, plain.id, { decision: 'approve', digest: plain.digest });
    expect(plainAnswer.status, JSON.stringify(plainAnswer.body)).toBe(200);
    await expect(card(page, plain.id)).toHaveAttribute('data-decision', 'approve');
    await expect.poll(() => existsSync(join(server.workspace, 'notes/plain.md'))).toBe(true);
    const snap0 = await (await page.request.get(`${server.url}/api/v1/sessions/${sid}`, { headers: bearer(server) })).json();
    const plainResolved = snap0.events.find((e: any) => e.type === 'approval_resolved' && e.approval_id === plain.id);
    expect(plainResolved.passkey).toBeUndefined();

    // An assertion made to approve A, by the page's own script: the browser holds only a random
    // handle; the ceremony the server keeps under its hash carries only its purpose (A as
    // shown, and the answer's fingerprint), its party, a nonce and an expiry; the authenticator
    // signed the challenge derived from A's id, A's digest, the answer and the nonce (computed
    // here independently).
    const approve = { decision: 'approve' };
    const a1 = await assertionForCard(page, sid, a.id, approve);
    const opened = openCeremony(server.dataDir, a1.ceremony);
    expect(Object.keys(opened).sort()).toEqual(['expires_ms', 'nonce', 'origin', 'rp_id', 'step']);
    expect(opened.step).toEqual({
      kind: 'assert', purpose: { for: 'gate', approval_id: a.id, digest: a.digest, answer: answerFingerprint(approve) },
    });
    expect(opened.rp_id).toBe('localhost');
    expect(opened.origin.replace(/\/$/, '')).toBe(local(server));
    expect(opened.expires_ms - Date.now()).toBeGreaterThan(4 * 60_000);
    expect(opened.expires_ms - Date.now()).toBeLessThanOrEqual(5 * 60_000);
    expect(opened.nonce).toMatch(/^[0-9a-f]{32}$/);
    expect(a1.ceremony).not.toContain(server.token);
    const signed = clientData(a1.credential);
    expect(signed.type).toBe('webauthn.get');
    expect(signed.origin).toBe(local(server));
    expect(signed.challenge).toBe(challengeFor({ approval_id: a.id, digest: a.digest, answer: approve }, opened.nonce));
    expect(signed.challenge).not.toBe(challengeFor({ approval_id: a.id, digest: a.digest, answer: { decision: 'deny' } }, opened.nonce));
    expect(signed.challenge).not.toBe(challengeFor({ approval_id: b.id, digest: b.digest, answer: approve }, opened.nonce));

    // A's assertion on B: refused, B pending.
    refused(await decide(page.request, server, sid, b.id, { decision: 'approve', digest: b.digest, passkey: a1 }),
      'passkey_refused', /not valid/);
    // Made to approve A, it neither denies A nor edits it.
    refused(await decide(page.request, server, sid, a.id, { decision: 'deny', digest: a.digest, passkey: a1 }),
      'passkey_refused', /not valid/);
    refused(await decide(page.request, server, sid, a.id, {
      decision: 'edit', digest: a.digest, edits: { path: '.env', content: 'A=2' }, passkey: a1,
    }), 'passkey_refused', /not valid/);
    // A's handle altered (a character changed, cut short, another prefix, its hash): refused.
    const flip = (s: string, i: number) => s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1);
    const hash = createHash('sha256').update(a1.ceremony).digest('hex');
    for (const ceremony of [flip(a1.ceremony, 20), flip(a1.ceremony, 40), a1.ceremony.slice(0, -4), `pk1${a1.ceremony.slice(3)}`, hash, `pk2.${hash}`]) {
      refused(await decide(page.request, server, sid, a.id, { decision: 'approve', digest: a.digest, passkey: { ...a1, ceremony } }),
        'passkey_refused', /not valid/);
    }
    // Reading the data dir makes no ceremony: the same one sealed the old way, keyed from the
    // VAPID key file, is nothing the server takes.
    refused(await decide(page.request, server, sid, a.id, {
      decision: 'approve', digest: a.digest, passkey: { ...a1, ceremony: sealedFromTheDataDir(server.dataDir, opened) },
    }), 'passkey_refused', /not valid/);
    // Expired (written into the database, as only its writer could): refused as expired.
    const expired = keepCeremony(server.dataDir, { ...opened, expires_ms: Date.now() - 1000 });
    refused(await decide(page.request, server, sid, a.id, { decision: 'approve', digest: a.digest, passkey: { ...a1, ceremony: expired } }),
      'passkey_refused', /expired/);
    // The same ceremony said to be from another origin of the same name (another port): no
    // passkey registered there is offered or taken — the laptop's is localhost:<this port>'s.
    const elsewhere = keepCeremony(server.dataDir, { ...opened, origin: 'http://localhost:1/' });
    refused(await decide(page.request, server, sid, a.id, { decision: 'approve', digest: a.digest, passkey: { ...a1, ceremony: elsewhere } }),
      'passkey_required', /no passkey is registered for http:\/\/localhost:1\//);
    // A's card as it was not shown (another digest): a stale answer, not a passkey question.
    const stale = await decide(page.request, server, sid, a.id, { decision: 'approve', digest: 'f'.repeat(64), passkey: a1 });
    expect(stale.status).toBe(409);
    expect(stale.body.error.code).toBe('stale_digest');
    await stillPending(a.id, b.id);

    // Even a ceremony written into the server's own database cannot turn A's assertion into B's,
    // nor an approval into a denial: the challenge is derived again from what the ceremony
    // claims, and the authenticator's signature is over A's approval. The attempt spends the
    // written ceremony (a second try is refused as used).
    const a2 = await assertionForCard(page, sid, a.id, approve);
    const a2opened = openCeremony(server.dataDir, a2.ceremony);
    const toB = { ...a2opened, step: { ...a2opened.step, purpose: { ...a2opened.step.purpose, approval_id: b.id, digest: b.digest } } };
    const forgedB = { ...a2, ceremony: keepCeremony(server.dataDir, toB) };
    refused(await decide(page.request, server, sid, b.id, { decision: 'approve', digest: b.digest, passkey: forgedB }),
      'passkey_refused', /did not verify/);
    refused(await decide(page.request, server, sid, b.id, { decision: 'approve', digest: b.digest, passkey: forgedB }),
      'passkey_refused', /already used/);
    const a3 = await assertionForCard(page, sid, a.id, approve);
    const a3opened = openCeremony(server.dataDir, a3.ceremony);
    const toDeny = { ...a3opened, step: { ...a3opened.step, purpose: { ...a3opened.step.purpose, answer: answerFingerprint({ decision: 'deny' }) } } };
    refused(await decide(page.request, server, sid, a.id, { decision: 'deny', digest: a.digest, passkey: { ...a3, ceremony: keepCeremony(server.dataDir, toDeny) } }),
      'passkey_refused', /did not verify/);
    await stillPending(a.id, b.id);
    expect(existsSync(join(server.workspace, '.env'))).toBe(false);
    expect(existsSync(join(server.workspace, '.env.b'))).toBe(false);

    // None of the refusals above spent a1: it answers A, once.
    const approved = await decide(page.request, server, sid, a.id, { decision: 'approve', digest: a.digest, passkey: a1 });
    expect(approved.status, JSON.stringify(approved.body)).toBe(200);
    expect(approved.body).toMatchObject({ approval_id: a.id, decision: 'approve' });
    await expect(card(page, a.id)).toHaveAttribute('data-decision', 'approve');
    await expect.poll(() => existsSync(join(server.workspace, '.env'))).toBe(true);
    const replay = await decide(page.request, server, sid, a.id, { decision: 'approve', digest: a.digest, passkey: a1 });
    expect(replay.status).toBe(409);
    expect(replay.body.error.code).toBe('already_resolved');
    // Nor B, where it was never good.
    refused(await decide(page.request, server, sid, b.id, { decision: 'approve', digest: b.digest, passkey: a1 }), 'passkey_refused');

    // B's own assertion with its signature tampered with: refused, and that spent it.
    const b1 = await assertionForCard(page, sid, b.id, approve);
    const sig = b1.credential.response.signature as string;
    const tampered = { ...b1, credential: { ...b1.credential, response: { ...b1.credential.response, signature: flip(sig, 20) } } };
    refused(await decide(page.request, server, sid, b.id, { decision: 'approve', digest: b.digest, passkey: tampered }),
      'passkey_refused', /did not verify/);
    refused(await decide(page.request, server, sid, b.id, { decision: 'approve', digest: b.digest, passkey: b1 }),
      'passkey_refused', /already used/);
    await stillPending(b.id);
    expect(existsSync(join(server.workspace, '.env.b'))).toBe(false);

    // An assertion made to deny B neither approves nor edits it, and those refusals spend
    // nothing: it then denies B, and the denial names the passkey too.
    const deny = { decision: 'deny' };
    const b2 = await assertionForCard(page, sid, b.id, deny);
    expect(openCeremony(server.dataDir, b2.ceremony).step.purpose).toEqual({ for: 'gate', approval_id: b.id, digest: b.digest, answer: answerFingerprint(deny) });
    expect(clientData(b2.credential).challenge).toBe(challengeFor({ approval_id: b.id, digest: b.digest, answer: deny }, openCeremony(server.dataDir, b2.ceremony).nonce));
    refused(await decide(page.request, server, sid, b.id, { decision: 'approve', digest: b.digest, passkey: b2 }),
      'passkey_refused', /not valid/);
    refused(await decide(page.request, server, sid, b.id, {
      decision: 'edit', digest: b.digest, edits: { path: '.env.b', content: 'B=3' }, passkey: b2,
    }), 'passkey_refused', /not valid/);
    await stillPending(b.id);
    expect(existsSync(join(server.workspace, '.env.b'))).toBe(false);
    const denied = await decide(page.request, server, sid, b.id, { decision: 'deny', digest: b.digest, passkey: b2 });
    expect(denied.status, JSON.stringify(denied.body)).toBe(200);
    await expect(card(page, b.id)).toHaveAttribute('data-decision', 'deny');
    expect(existsSync(join(server.workspace, '.env.b'))).toBe(false);

    const snap = await (await page.request.get(`${server.url}/api/v1/sessions/${sid}`, { headers: bearer(server) })).json();
    const resolutions = snap.events.filter((e: any) => e.type === 'approval_resolved');
    expect(resolutions.map((e: any) => [e.approval_id, e.decision, e.actor, e.passkey ?? null]).sort()).toEqual([
      [a.id, 'approve', 'token:admin', 'laptop'],
      [b.id, 'deny', 'token:admin', 'laptop'],
      [plain.id, 'approve', 'token:admin', null],
    ].sort());
    const entries = await audit(page.request, server, 'gate_resolved');
    expect(entries.find((e) => e.subject === a.id)?.detail.passkey).toBe('laptop');
    expect(entries.find((e) => e.subject === b.id)?.detail.passkey).toBe('laptop');
    expect(entries.find((e) => e.subject === plain.id)?.detail.passkey).toBeNull();
    // A resolved card offers no more ceremonies.
    const late = await page.request.post(`${local(server)}/api/v1/sessions/${sid}/approvals/${a.id}/passkey`, {
      headers: bearer(server), data: { decision: 'deny' },
    });
    expect(late.status()).toBe(409);
    expect((await late.json()).error.code).toBe('already_resolved');
  });

  test('the passkeys in force when a card was opened: reset by the local CLI, then none answers until one is registered', async ({ page, server }) => {
    await loginLocal(page, server);
    const session = page.url();
    const sid = sessionId(page);
    await Authenticator.attach(page);
    await registerOnPage(page, server, 'laptop');
    await page.goto(session);
    await waitLive(page);
    const id = await openCard(page, 'write .env: AFTER=reset');
    const digest = (await pending(page.request, server)).find((g) => g.approval_id === id).digest;
    // An assertion made before the reset.
    const before = await assertionForCard(page, sid, id);

    const { code, stdout, stderr } = await runBin(['passkey', 'reset', '--data-dir', server.dataDir]);
    expect(code, stderr).toBe(0);
    expect(stdout.trim()).toBe('removed 1 passkey(s); register a new one on the Security page');
    expect(await passkeys(page.request, server)).toEqual([]);
    const resets = await audit(page.request, server, 'passkeys_reset');
    expect(resets).toHaveLength(1);
    expect(resets[0]).toMatchObject({ actor: 'cli', subject: 'passkeys', detail: { removed: 1 } });

    // The assertion made before no longer answers (it is checked against the passkeys stored
    // now, and there are none); the card waits.
    const res = await decide(page.request, server, sid, id, { decision: 'approve', digest, passkey: before });
    expect(res.status, JSON.stringify(res.body)).toBe(403);
    expect(res.body.error.code).toBe('passkey_required');
    expect(res.body.error.message).toBe(`no passkey is registered for ${local(server)}/; register one on the Security page`);
    // None registered: no ceremony for the card, and the page says what to do.
    const none = await page.request.post(`${local(server)}/api/v1/sessions/${sid}/approvals/${id}/passkey`, {
      headers: bearer(server), data: { decision: 'approve' },
    });
    expect(none.status()).toBe(403);
    expect((await none.json()).error.code).toBe('passkey_required');
    const floorCard = card(page, id);
    await floorCard.locator('[data-action=approve]').click();
    await expect(floorCard.getByTestId('card-notice')).toHaveText(
      `Not answered: no passkey is registered for ${local(server)}/; register one on the Security page`);
    await expect(floorCard).toHaveAttribute('data-state', 'pending');
    expect(existsSync(join(server.workspace, '.env'))).toBe(false);

    // The Security page lists none; a new one is registered by the admin alone, and answers.
    await openSecurity(page, server);
    await expect(listed(page)).toHaveCount(0);
    await expect(page.getByTestId('passkey-none')).toBeVisible();
    await registerOnPage(page, server, 'laptop again');
    // The removed passkey's assertion (its ceremony unspent, made for this very answer) does
    // not answer through the new one either.
    const stillOld = await decide(page.request, server, sid, id, { decision: 'approve', digest, passkey: before });
    expect(stillOld.status, JSON.stringify(stillOld.body)).toBe(403);
    expect(stillOld.body.error.code).toBe('passkey_refused');
    expect(stillOld.body.error.message).toMatch(/^the passkey did not verify: /);
    expect(existsSync(join(server.workspace, '.env'))).toBe(false);
    await page.goto(session);
    await waitLive(page);
    await card(page, id).locator('[data-action=approve]').click();
    await expect(card(page, id)).toHaveAttribute('data-decision', 'approve');
    await expect.poll(() => existsSync(join(server.workspace, '.env'))).toBe(true);
    const resolved = (await audit(page.request, server, 'gate_resolved')).find((e) => e.subject === id);
    expect(resolved.detail.passkey).toBe('laptop again');

    // The CLI's entry is chained like every other: the whole log verifies.
    const verdict = await (await page.request.get(`${server.url}/api/v1/audit/verify`, { headers: bearer(server) })).json();
    expect(verdict.ok).toBe(true);
    // A second reset removes the new one.
    const again = await runBin(['passkey', 'reset', '--data-dir', server.dataDir]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout.trim()).toBe('removed 1 passkey(s); register a new one on the Security page');
    expect(await passkeys(page.request, server)).toEqual([]);
  });
});

test.describe('with require_passkey = "all"', () => {
  test.use({ serverConfig: '[approvals]\nrequire_passkey = "all"\n' });

  test('an ordinary card needs the passkey too', async ({ page, server }) => {
    await loginLocal(page, server);
    const session = page.url();
    const sid = sessionId(page);
    await Authenticator.attach(page);
    await registerOnPage(page, server, 'laptop');
    await page.goto(session);
    await waitLive(page);
    const id = await openCard(page, 'write notes/a.md: hi');
    const g = (await pending(page.request, server)).find((w) => w.approval_id === id);
    expect(g.reason).not.toBe('safety_floor');
    const res = await decide(page.request, server, sid, id, { decision: 'approve', digest: g.digest });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('passkey_required');
    await card(page, id).locator('[data-action=approve]').click();
    await expect(card(page, id)).toHaveAttribute('data-decision', 'approve');
    await expect.poll(() => existsSync(join(server.workspace, 'notes/a.md'))).toBe(true);
    const resolved = (await audit(page.request, server, 'gate_resolved')).find((e) => e.subject === id);
    expect(resolved.detail.passkey).toBe('laptop');
  });
});

test('with one passkey registered, adding or removing another asks for it first', async ({ page, server }) => {
  await loginLocal(page, server);
  const session = page.url();
  const sid = sessionId(page);
  const laptop = await Authenticator.attach(page);
  const start = (data: object, base = local(server)) =>
    page.request.post(`${base}/api/v1/passkeys/registrations`, { headers: bearer(server), data });
  // With none registered a logged-in browser alone starts a registration (the first passkey is
  // a browser's to register: a token read from a file adds none)…
  const early = await page.request.post(`${local(server)}/api/v1/passkeys/registrations`, {
    headers: { Origin: local(server) }, data: { name: 'early' },
  });
  expect(early.status(), await early.text()).toBe(200);
  const earlyCeremony = await early.json();
  await registerOnPage(page, server, 'laptop');
  const [laptopKey] = await passkeys(page.request, server);
  const laptopCredential = (await laptop.credentials())[0];
  // …which cannot finish once a passkey was registered meanwhile, though its credential is
  // genuine (this device made it for that very ceremony).
  const earlyCredential = await createCredential(page, earlyCeremony.options);
  const lateFinish = await page.request.post(`${local(server)}/api/v1/passkeys`, {
    headers: { Origin: local(server) }, data: { ceremony: earlyCeremony.ceremony, credential: earlyCredential },
  });
  expect(lateFinish.status()).toBe(403);
  expect((await lateFinish.json()).error.code).toBe('passkey_required');
  expect((await passkeys(page.request, server)).map((k) => k.name)).toEqual(['laptop']);

  // WebAuthn needs a domain: at the IP address the server says where to go instead.
  const atIp = await start({ name: 'phone' }, server.url);
  expect(atIp.status()).toBe(400);
  expect((await atIp.json()).error.message).toContain(`open Countersign at http://localhost:${new URL(server.url).port}`);
  // The admin token alone no longer adds one; nor does a made-up assertion.
  const alone = await start({ name: 'phone' });
  expect(alone.status()).toBe(403);
  expect((await alone.json()).error.code).toBe('passkey_required');
  const madeUp = await start({ name: 'phone', passkey: { ceremony: 'pk1.e30.AAAA', credential: {} } });
  expect(madeUp.status()).toBe(403);
  expect((await madeUp.json()).error.code).toBe('passkey_refused');
  // Nor an assertion made to answer a card.
  await page.goto(session);
  await waitLive(page);
  const cardId = await openCard(page, 'write notes/a.md: hi');
  const forCard = await assertionForCard(page, sid, cardId);
  const wrongPurpose = await start({ name: 'phone', passkey: forCard });
  expect(wrongPurpose.status()).toBe(403);
  expect((await wrongPurpose.json()).error.code).toBe('passkey_refused');
  // Finishing needs a ceremony this server started.
  const forged = await page.request.post(`${local(server)}/api/v1/passkeys`, {
    headers: bearer(server), data: { ceremony: 'pk1.e30.AAAA', credential: {} },
  });
  expect(forged.status()).toBe(403);
  expect((await forged.json()).error.code).toBe('passkey_refused');
  // A name is one passkey's.
  expect((await start({ name: 'laptop' })).status()).toBe(409);

  // An assertion to manage passkeys starts one registration, once; its options exclude the
  // authenticator that already holds one.
  await openSecurity(page, server);
  const addPhone = { change: 'add', name: 'phone' } as const;
  const proof = await assertionToManage(page, addPhone);
  const proofOpened = openCeremony(server.dataDir, proof.ceremony);
  expect(proofOpened.step).toEqual({ kind: 'assert', purpose: { for: 'manage', change: 'add:phone' } });
  const signed = clientData(proof.credential);
  expect(signed.challenge).toBe(challengeFor(addPhone, proofOpened.nonce));
  // Made for adding "phone", it adds no other name and removes nothing — and those
  // refusals spend nothing.
  const otherName = await start({ name: 'tablet', passkey: proof });
  expect(otherName.status()).toBe(403);
  expect((await otherName.json()).error).toMatchObject({ code: 'passkey_refused', message: expect.stringMatching(/not valid/) });
  const removeWithAdd = await page.request.delete(`${server.url}/api/v1/passkeys/${laptopKey.id}`, {
    headers: bearer(server), data: { passkey: proof },
  });
  expect(removeWithAdd.status()).toBe(403);
  expect((await removeWithAdd.json()).error).toMatchObject({ code: 'passkey_refused', message: expect.stringMatching(/not valid/) });
  expect(await passkeys(page.request, server)).toHaveLength(1);
  // Re-written in the server's database as an assertion to add "tablet", another one is
  // refused: its signature is over the challenge for "phone" (and the written one is spent trying).
  const other = await assertionToManage(page, addPhone);
  const toTablet = { ...openCeremony(server.dataDir, other.ceremony), step: { kind: 'assert', purpose: { for: 'manage', change: 'add:tablet' } } };
  const forgedTablet = { ...other, ceremony: keepCeremony(server.dataDir, toTablet) };
  const resealed = await start({ name: 'tablet', passkey: forgedTablet });
  expect(resealed.status()).toBe(403);
  expect((await resealed.json()).error).toMatchObject({ code: 'passkey_refused', message: expect.stringMatching(/did not verify/) });
  const otherAgain = await start({ name: 'tablet', passkey: forgedTablet });
  expect(otherAgain.status()).toBe(403);
  expect((await otherAgain.json()).error.message).toMatch(/already used/);
  const started = await start({ name: 'phone', passkey: proof });
  expect(started.status(), await started.text()).toBe(200);
  const { options } = await started.json();
  expect(options.publicKey.excludeCredentials.map((c: any) => c.id)).toEqual([laptopCredential.credentialId.replace(/=+$/, '').replace(/\+/g, '-').replace(/\//g, '_')]);
  const again = await start({ name: 'phone', passkey: proof });
  expect(again.status()).toBe(403);
  expect((await again.json()).error.message).toMatch(/already used/);
  expect(await passkeys(page.request, server)).toHaveLength(1);

  // Through the page: the laptop confirms, then a second device (the phone) makes the new
  // passkey: the laptop is taken away between the two, as the person would pick up the phone.
  let phone: Authenticator | undefined;
  await page.route('**/api/v1/passkeys/registrations', async (route) => {
    await laptop.detach();
    phone = await Authenticator.attach(page);
    await route.continue();
  });
  await registerOnPage(page, server, 'phone');
  await page.unroute('**/api/v1/passkeys/registrations');
  expect(phone, 'the registration went through the route').toBeDefined();
  const phoneHeld = await phone!.credentials();
  expect(phoneHeld).toHaveLength(1);
  expect(phoneHeld[0].credentialId).not.toBe(laptopCredential.credentialId);
  const both = await passkeys(page.request, server);
  expect(both.map((k) => k.name)).toEqual(['laptop', 'phone']);
  expect(both[0].last_used_at, 'the laptop confirmed the new one').not.toBeNull();
  await expect(listed(page).filter({ hasText: 'phone' })).toHaveCount(1);

  // Removing: not with the token alone; an unknown one is not found.
  const removeAlone = await page.request.delete(`${server.url}/api/v1/passkeys/${laptopKey.id}`, { headers: bearer(server), data: {} });
  expect(removeAlone.status()).toBe(403);
  expect((await removeAlone.json()).error.code).toBe('passkey_required');
  const unknown = await page.request.delete(`${server.url}/api/v1/passkeys/00000000-0000-4000-8000-000000000000`, { headers: bearer(server), data: {} });
  expect(unknown.status()).toBe(404);
  expect(await passkeys(page.request, server)).toHaveLength(2);
  // An assertion for removing the phone's own passkey does not remove the laptop's.
  const phoneKey = both.find((k) => k.name === 'phone')!;
  const removePhone = await assertionToManage(page, { change: 'remove', id: phoneKey.id });
  expect(openCeremony(server.dataDir, removePhone.ceremony).step.purpose).toEqual({ for: 'manage', change: `remove:${phoneKey.id}` });
  const wrongTarget = await page.request.delete(`${server.url}/api/v1/passkeys/${laptopKey.id}`, {
    headers: bearer(server), data: { passkey: removePhone },
  });
  expect(wrongTarget.status()).toBe(403);
  expect((await wrongTarget.json()).error).toMatchObject({ code: 'passkey_refused', message: expect.stringMatching(/not valid/) });
  expect(await passkeys(page.request, server)).toHaveLength(2);
  // On the page, the phone confirms the laptop's removal.
  const phoneCount = (await phone!.credentials())[0].signCount;
  await listed(page).filter({ hasText: 'laptop' }).getByTestId('passkey-remove').click();
  await expect(page.getByTestId('passkey-status')).toHaveText('Removed the passkey “laptop”.');
  await expect(listed(page)).toHaveCount(1);
  await expect(listed(page).first()).toContainText('phone · localhost');
  expect((await phone!.credentials())[0].signCount).toBeGreaterThan(phoneCount);
  const left = await passkeys(page.request, server);
  expect(left.map((k) => k.name)).toEqual(['phone']);
  expect(left[0].last_used_at).not.toBeNull();

  const registered = await audit(page.request, server, 'passkey_registered');
  expect(registered.map((e) => e.detail.name)).toEqual(['laptop', 'phone']);
  const removed = await audit(page.request, server, 'passkey_removed');
  expect(removed).toHaveLength(1);
  expect(removed[0]).toMatchObject({ actor: 'browser', subject: `passkey:${laptopKey.id}`, detail: { name: 'laptop' } });
});

test.describe('an approve token, with require_passkey = "floor"', () => {
  test.use({ serverConfig: FLOOR });

  test('the Security page and the passkey routes are an admin\'s: an approve token gets 403, yet answers with a passkey', async ({ page, browser, server }) => {
    await loginLocal(page, server);
    const sessionPage = page.url();
    const sid = sessionId(page);
    const laptop = await Authenticator.attach(page);
    await registerOnPage(page, server, 'laptop');
    const [key] = await passkeys(page.request, server);
    const made = await page.request.post(`${server.url}/api/v1/tokens`, { headers: bearer(server), data: { name: 'phone', scope: 'approve' } });
    expect(made.status(), await made.text()).toBe(201);
    const { token } = await made.json();

    const phoneContext = await browser.newContext();
    try {
      const phone = await phoneContext.newPage();
      await phone.goto(`${local(server)}/login?token=${token}`);
      await expect(phone).toHaveURL(`${local(server)}/inbox`);
      const res = await phone.goto(`${local(server)}/security`);
      expect(res!.status()).toBe(403);
      await expect(phone.locator('body')).toContainText('Passkeys are managed with an admin credential.');
      await expect(phone.getByTestId('passkey-add')).toHaveCount(0);
      // Nor the routes behind it, with the page's cookie or the token itself.
      const api = phone.request;
      const base = `${local(server)}/api/v1/passkeys`;
      expect((await api.get(base)).status()).toBe(403);
      expect((await api.post(`${base}/registrations`, { data: { name: 'mine' } })).status()).toBe(403);
      expect((await api.post(`${base}/assertions`, { data: {} })).status()).toBe(403);
      expect((await api.delete(`${base}/${key.id}`, { data: {} })).status()).toBe(403);
      expect((await api.get(base, { headers: { Authorization: `Bearer ${token}` } })).status()).toBe(403);
      expect((await api.post(`${base}/registrations`, { headers: { Authorization: `Bearer ${token}` }, data: { name: 'mine' } })).status()).toBe(403);
      expect(await passkeys(page.request, server)).toHaveLength(1);

      // The approve token answers cards: here a card's ceremony starts for it, and its owner's
      // passkey (on this phone too) confirms the answer — the answer is the token's and names
      // the passkey.
      await page.goto(sessionPage);
      await waitLive(page);
      await send(page, 'write .env: FROM=phone');
      await expect(pendingCards(page)).toHaveCount(1);
      const id = (await pendingCards(page).getAttribute('data-approval-id'))!;
      const options = await api.post(`${local(server)}/api/v1/sessions/${sid}/approvals/${id}/passkey`, {
        data: { decision: 'approve' },
      });
      expect(options.status()).toBe(200);
      const opened = await options.json();
      expect(opened.options.publicKey.rpId).toBe('localhost');
      expect(opened.options.publicKey.allowCredentials).toHaveLength(1);
      const digest = (await pending(page.request, server)).find((g) => g.approval_id === id).digest;
      const bare = await api.post(`${server.url}/api/v1/sessions/${sid}/approvals/${id}`, {
        headers: { Authorization: `Bearer ${token}` }, data: { decision: 'approve', digest },
      });
      expect(bare.status()).toBe(403);
      expect((await bare.json()).error.code).toBe('passkey_required');
      await Authenticator.attach(phone, await laptop.credentials());
      await phone.goto(`${local(server)}/sessions/${sid}`);
      await waitLive(phone);
      await card(phone, id).locator('[data-action=approve]').click();
      await expect(card(phone, id)).toHaveAttribute('data-decision', 'approve');
      await expect(card(page, id)).toHaveAttribute('data-decision', 'approve');
      await expect.poll(() => existsSync(join(server.workspace, '.env'))).toBe(true);
      const entry = (await audit(page.request, server, 'gate_resolved')).find((e) => e.subject === id);
      expect(entry).toMatchObject({ actor: 'token:phone', detail: { passkey: 'laptop' } });
    } finally {
      await phoneContext.close();
    }
  });
});

test('an assertion to manage passkeys is used once, even across a restart of the server', async ({ page, server }) => {
  await loginLocal(page, server);
  await Authenticator.attach(page);
  await registerOnPage(page, server, 'laptop');
  const start = (data: object) =>
    page.request.post(`${local(server)}/api/v1/passkeys/registrations`, { headers: bearer(server), data });
  const proof = await assertionToManage(page, { change: 'add', name: 'phone' });
  // Made before the restart and never used: it must still open after it (the seal's key comes
  // from the data dir, not from the process).
  const unused = await assertionToManage(page, { change: 'add', name: 'tablet' });
  const first = await start({ name: 'phone', passkey: proof });
  expect(first.status(), await first.text()).toBe(200);
  const second = await start({ name: 'phone', passkey: proof });
  expect(second.status()).toBe(403);
  expect((await second.json()).error.message).toMatch(/already used/);

  // The ceremony is good for five minutes and its spent nonce is kept in the database: a
  // restarted server (same data dir) must not take it a second time.
  await server.crash();
  await server.restart();
  const afterRestart = await start({ name: 'phone', passkey: proof });
  expect(afterRestart.status(), 'a used assertion is refused after a restart').toBe(403);
  expect((await afterRestart.json()).error).toMatchObject({ code: 'passkey_refused', message: expect.stringMatching(/already used/) });
  // The unused one still starts its registration, once.
  const fresh = await start({ name: 'tablet', passkey: unused });
  expect(fresh.status(), await fresh.text()).toBe(200);
  const freshAgain = await start({ name: 'tablet', passkey: unused });
  expect(freshAgain.status()).toBe(403);
  expect((await freshAgain.json()).error.message).toMatch(/already used/);
  expect((await passkeys(page.request, server)).map((k) => k.name)).toEqual(['laptop']);
});

/** Runs the countersign binary to its end. */
function runBin(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((ok, fail) => {
    const child = spawn(BIN, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d.toString(); });
    child.stderr.on('data', (d) => { stderr += d.toString(); });
    child.on('error', fail);
    child.on('exit', (code) => ok({ code, stdout, stderr }));
  });
}
