// The installable app and Web Push, end to end: the manifest and worker make the app
// installable and show an offline page (never a stale card); a browser subscribes through
// "Notify this device" to a push service on loopback written here independently of the
// server (Node's OpenSSL: the VAPID JWT verified, each push decrypted per RFC 8291); a
// waiting card's push is answered from the worker's own notification handler with the
// capability it carried, once, for that card and that digest only; a card on the safety
// floor comes without one; a push service's 410 unsubscribes the device.
import { createHmac } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, expect, Page, request as playwrightRequest, TestInfo } from '@playwright/test';
import { card, login, pendingCards, send, sessionId, test as serverTest, toolResults, waitLive } from './helpers';
import { RunningServer } from './server';
import { b64url, FakePushService, FakeSubscription, ReceivedPush, unb64url } from './push-service';

const test = serverTest.extend<{ push: FakePushService }>({
  push: async ({}, use) => {
    const push = new FakePushService();
    await push.start();
    await use(push);
    await push.stop();
  },
});

// The fake push service is on loopback, which only this setting allows.
test.use({ serverConfig: '[notify]\npush_test_endpoints = true\n' });

const auth = (server: RunningServer) => ({ Authorization: `Bearer ${server.token}` });

/** The server's VAPID public key, as `/api/v1/push/key` gives it. */
async function serverKey(page: Page, server: RunningServer): Promise<string> {
  const res = await page.request.get(`${server.url}/api/v1/push/key`, { headers: auth(server) });
  expect(res.status()).toBe(200);
  const { public_key } = await res.json();
  expect(public_key).toMatch(/^[A-Za-z0-9_-]{87}$/);
  return public_key;
}

interface PageSubscription {
  fake: FakeSubscription;
  /** The server's id of it, as the page kept it. */
  id: string;
  /** What the page handed the stand-in for `pushManager.subscribe`. */
  given: { key: number[]; userVisibleOnly: boolean; isUint8Array: boolean };
}

/**
 * Subscribes this (logged-in) browser through /notify: notifications granted, the stand-in
 * for the browser's push service returns a subscription of the fake push service.
 */
async function subscribeThroughPage(page: Page, server: RunningServer, push: FakePushService): Promise<PageSubscription> {
  await page.context().grantPermissions(['notifications'], { origin: server.url });
  const fake = push.subscribe();
  let given: PageSubscription['given'] | undefined;
  await page.exposeFunction('__countersignFakeSubscribe', (key: number[], userVisibleOnly: boolean, isUint8Array: boolean) => {
    given = { key, userVisibleOnly, isUint8Array };
    return fake.json;
  });
  await page.addInitScript(() => {
    (window as any).countersignTestSubscribe = (options: { userVisibleOnly: boolean; applicationServerKey: Uint8Array }) =>
      (window as any).__countersignFakeSubscribe(
        Array.from(options.applicationServerKey), options.userVisibleOnly, options.applicationServerKey instanceof Uint8Array);
  });
  await page.goto(`${server.url}/notify`);
  await expect(page.locator('body')).toHaveAttribute('data-ready', 'true');
  await expect(page.getByTestId('push-status')).toHaveText('This device is not notified yet.');
  await expect(page.getByTestId('push-on')).toBeVisible();
  await page.getByTestId('push-on').click();
  await expect(page.getByTestId('push-status')).toHaveText('This device will be notified when a card waits for you.');
  expect(given, 'the page asked the push service for a subscription').toBeDefined();
  const id = await page.evaluate(() => localStorage.getItem('countersign-push-subscription'));
  expect(id).toMatch(/^[0-9a-f-]{36}$/);
  return { fake, id: id!, given: given! };
}

/** Posts `data` to the active service worker and waits for its reply on a MessageChannel. */
async function worker(page: Page, data: unknown): Promise<any> {
  return page.evaluate(async (data) => {
    const reg = await navigator.serviceWorker.ready;
    return new Promise((ok, fail) => {
      const channel = new MessageChannel();
      const timer = setTimeout(() => fail(new Error('the worker did not reply')), 20_000);
      channel.port1.onmessage = (e) => { clearTimeout(timer); ok(e.data); };
      reg.active!.postMessage(data, [channel.port2]);
    });
  }, data);
}

/** Waits for exactly `count` pushes matching `pred`, and returns them. */
async function pushes(push: FakePushService, pred: (msg: any) => boolean, count = 1): Promise<ReceivedPush[]> {
  await expect.poll(() => push.messages(pred).length, { timeout: 30_000 }).toBe(count);
  return push.messages(pred);
}

/** The gate push for `approvalId`, checked for what every push must be. */
async function gatePush(push: FakePushService, approvalId: string): Promise<ReceivedPush> {
  const [p] = await pushes(push, (m) => m.type === 'gate' && m.approval_id === approvalId);
  expectWellFormed(p);
  return p;
}

function expectWellFormed(p: ReceivedPush) {
  expect(p.vapid, p.vapid.error).toMatchObject({ ok: true });
  expect(p.decryptError).toBeUndefined();
  expect(p.headers['content-encoding']).toBe('aes128gcm');
  expect(Number(p.headers['ttl'])).toBeGreaterThan(0);
  expect(p.headers['urgency']).toBe('high');
  expect(p.headers['topic']).toMatch(/^[A-Za-z0-9_-]{1,32}$/);
  // One push message holds at most 4096 bytes.
  expect(p.raw.length).toBeLessThanOrEqual(4096);
}

/** A capability POSTed with no cookie and no bearer, as from anywhere. */
async function answerAnonymously(server: RunningServer, capability: string, decision: string) {
  const anon = await playwrightRequest.newContext();
  try {
    const res = await anon.post(`${server.url}/api/v1/push/answers/${encodeURIComponent(capability)}`, {
      data: { decision },
    });
    let body: any = null;
    try { body = await res.json(); } catch { /* none */ }
    return { status: res.status(), body };
  } finally {
    await anon.dispose();
  }
}

/** A pending card's id once it shows. */
async function openCard(page: Page, command: string): Promise<string> {
  const before = await pendingCards(page).count();
  await send(page, command);
  await expect(pendingCards(page)).toHaveCount(before + 1);
  return (await pendingCards(page).last().getAttribute('data-approval-id'))!;
}

/** Width and height from a PNG's IHDR. */
function pngSize(png: Buffer): [number, number] {
  expect(png.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])), 'a PNG signature').toBe(true);
  expect(png.subarray(12, 16).toString('latin1')).toBe('IHDR');
  return [png.readUInt32BE(16), png.readUInt32BE(20)];
}

/** Chromium's own installability check (`Page.getInstallabilityErrors`) finds nothing. */
async function expectInstallable(server: RunningServer, testInfo: TestInfo) {
  const profile = mkdtempSync(join(tmpdir(), 'countersign-pwa-profile-'));
  const browser = await chromium.launchPersistentContext(profile, { ...testInfo.project.use.launchOptions });
  try {
    const page = browser.pages()[0] ?? await browser.newPage();
    await page.goto(`${server.url}/login?token=${server.token}`);
    await expect(page).toHaveURL(/\/sessions\/[0-9a-f-]{36}$/);
    await page.goto(`${server.url}/inbox`);
    await expect.poll(() => page.evaluate(() => !!navigator.serviceWorker.controller), { timeout: 30_000 }).toBe(true);
    const cdp = await browser.newCDPSession(page);
    const { url: manifestUrl, errors } = await cdp.send('Page.getAppManifest') as any;
    expect(manifestUrl).toBe(`${server.url}/manifest.webmanifest`);
    expect(errors).toEqual([]);
    const { installabilityErrors } = await cdp.send('Page.getInstallabilityErrors');
    expect(installabilityErrors).toEqual([]);
    await cdp.detach();
  } finally {
    await browser.close();
    rmSync(profile, { recursive: true, force: true });
  }
}

test('installable: a public manifest with its icons, a worker at /, no installability errors, an offline page', async ({ page, context, server }, testInfo) => {
  // The manifest, worker, offline page and icons need no cookie (browsers fetch a manifest
  // without one).
  const anon = await playwrightRequest.newContext();
  const manifestRes = await anon.get(`${server.url}/manifest.webmanifest`);
  expect(manifestRes.status()).toBe(200);
  expect(manifestRes.headers()['content-type']).toContain('application/manifest+json');
  const manifest = await manifestRes.json();
  expect(manifest.name).toBe('Countersign');
  expect(manifest.short_name).toBeTruthy();
  expect(manifest.start_url).toBe('/inbox');
  expect(manifest.display).toBe('standalone');
  for (const size of [192, 512]) {
    const icon = manifest.icons.find((i: any) => i.sizes === `${size}x${size}` && i.type === 'image/png'
      && (i.purpose ?? 'any').split(' ').includes('any'));
    expect(icon, `a ${size}px PNG icon`).toBeDefined();
    const res = await anon.get(new URL(icon.src, server.url).href);
    expect(res.status(), icon.src).toBe(200);
    expect(res.headers()['content-type']).toBe('image/png');
    expect(pngSize(await res.body())).toEqual([size, size]);
  }
  for (const path of ['/sw.js', '/offline.html', '/pwa.js']) {
    const res = await anon.get(`${server.url}${path}`);
    expect(res.status(), path).toBe(200);
  }
  const sw = await anon.get(`${server.url}/sw.js`);
  expect(sw.headers()['content-type']).toMatch(/javascript/);
  // Without a cookie the app's pages themselves stay closed.
  const inboxAnon = await anon.get(`${server.url}/api/v1/push/key`);
  expect(inboxAnon.status()).toBe(401);
  await anon.dispose();

  // A card waits, so an Inbox served from anywhere but the server would show one.
  await login(page, server);
  await openCard(page, 'write notes/offline.md: not while offline');

  await page.goto(`${server.url}/inbox`);
  await expect(page.locator('head link[rel=manifest]')).toHaveAttribute('href', '/manifest.webmanifest');
  await expect(page.locator('script[src="/pwa.js"]')).toHaveCount(1);
  await expect(pendingCards(page)).toHaveCount(1);
  // The worker registers, activates with scope `/`, and takes the page.
  await expect.poll(() => page.evaluate(async () => {
    const reg = await navigator.serviceWorker.getRegistration('/');
    return reg ? { scope: reg.scope, state: reg.active?.state ?? null, script: reg.active?.scriptURL ?? null } : null;
  }), { timeout: 30_000 }).toEqual({ scope: `${server.url}/`, state: 'activated', script: `${server.url}/sw.js` });
  await expect.poll(() => page.evaluate(() => !!navigator.serviceWorker.controller), { timeout: 30_000 }).toBe(true);

  // Chromium reports every context Playwright makes as incognito ("in-incognito"), where no
  // app installs: the installability check runs in a browser profile of its own.
  await expectInstallable(server, testInfo);

  // Offline: the worker stands the offline page in; no card from any copy.
  await context.setOffline(true);
  try {
    await page.goto(`${server.url}/inbox`);
    await expect(page.getByTestId('offline')).toBeVisible();
    await expect(page.getByTestId('offline')).toContainText('The server cannot be reached');
    await expect(page.locator('[data-testid=approval-card]')).toHaveCount(0);
    await expect(page).toHaveTitle(/Offline/);
    // Any page of the app, not just the Inbox.
    await page.goto(`${server.url}/sessions/00000000-0000-4000-8000-000000000000`);
    await expect(page.getByTestId('offline')).toBeVisible();
  } finally {
    await context.setOffline(false);
  }
  // Back online, the real Inbox with its card.
  await page.goto(`${server.url}/inbox`);
  await expect(page.getByTestId('offline')).toHaveCount(0);
  await expect(pendingCards(page)).toHaveCount(1);
});

test('subscribe through "Notify this device": the server key is the one given, the test push arrives signed and decrypts', async ({ page, server, push }) => {
  await login(page, server);
  const key = await serverKey(page, server);
  const sub = await subscribeThroughPage(page, server, push);
  // The page subscribed with the server's key, as bytes, user-visible only.
  expect(sub.given.isUint8Array).toBe(true);
  expect(sub.given.userVisibleOnly).toBe(true);
  expect(b64url(Buffer.from(sub.given.key))).toBe(key);
  expect(unb64url(key)).toHaveLength(65);

  // The list shows it, for this browser's credential, on the push service's host; no keys.
  const items = page.getByTestId('push-list').getByTestId('push-subscription');
  await expect(items).toHaveCount(1);
  await expect(items.first()).toContainText('127.0.0.1 · browser · since');
  await expect(items.first()).toContainText('(this device)');
  await expect(page.getByTestId('push-on')).toBeHidden();
  await expect(page.getByTestId('push-test')).toBeVisible();
  const listed = await (await page.request.get(`${server.url}/api/v1/push/subscriptions`, { headers: auth(server) })).json();
  expect(listed).toHaveLength(1);
  expect(listed[0].id).toBe(sub.id);
  expect(JSON.stringify(listed)).not.toContain(sub.fake.json.keys.p256dh);
  expect(JSON.stringify(listed)).not.toContain(sub.fake.json.keys.auth);
  // Subscribing sends nothing yet.
  expect(push.received).toHaveLength(0);

  await page.getByTestId('push-test').click();
  await expect(page.getByTestId('push-status')).toHaveText('Test sent: a notification should appear.');
  const [test] = await pushes(push, (m) => m.type === 'test');
  expectWellFormed(test);
  expect(test.subscription).toBe(sub.fake.id);
  expect(test.vapid.k).toBe(key);
  expect(test.vapid.claims.aud).toBe(push.origin);
  expect(test.message).toMatchObject({ type: 'test', tag: 'countersign-test', title: 'Countersign', url: '/inbox' });
  expect(push.received).toHaveLength(1);

  // The worker shows it as a plain notification: no buttons.
  const shown = await worker(page, { type: 'countersign-test-push', msg: test.message });
  expect(shown).toEqual({ title: 'Countersign', actions: [], shown: 1 });

  // A reload finds it again; Stop removes it.
  await page.reload();
  await expect(page.getByTestId('push-status')).toHaveText('This device is notified when a card waits for you.');
  await page.getByTestId('push-off').click();
  await expect(page.getByTestId('push-status')).toHaveText('This device is no longer notified.');
  await expect(items).toHaveCount(0);
  await expect(page.getByTestId('push-on')).toBeVisible();
});

test("a card's push is answered from the notification once, for that card and digest only", async ({ page, server, push }) => {
  await login(page, server);
  const session = page.url();
  const sid = sessionId(page);
  const key = await serverKey(page, server);
  const sub = await subscribeThroughPage(page, server, push);
  await page.goto(session);
  await waitLive(page);

  // Card A: its push arrives, signed and decryptable, with a capability and both buttons.
  const a = await openCard(page, 'write notes/push.md: hello');
  const pushA = await gatePush(push, a);
  expect(pushA.vapid.k).toBe(key);
  const msgA = pushA.message;
  expect(msgA).toMatchObject({
    type: 'gate', tag: `gate-${a}`, approval_id: a, session_id: sid, sensitive: false,
    tool: 'write_file', url: `/sessions/${sid}#gate-${a}`, actions: ['approve', 'deny'],
  });
  expect(msgA.title).toMatch(/^Approval needed: /);
  expect(msgA.body).toContain('write_file');
  expect(msgA.summary).toContain('notes/push.md');
  expect(typeof msgA.headline).toBe('string');
  expect(Date.parse(msgA.expires_at)).toBeGreaterThan(Date.now());
  expect(msgA.capability).toMatch(/^cs1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
  // Nothing of the credentials is in it.
  expect(JSON.stringify(msgA)).not.toContain(server.token);

  const shown = await worker(page, { type: 'countersign-test-push', msg: msgA });
  expect(shown).toEqual({ title: msgA.title, actions: ['approve', 'deny'], shown: 1 });

  // Approve from the notification: the worker answers with the capability, no credentials.
  const approved = await worker(page, { type: 'countersign-test-action', msg: msgA, action: 'approve' });
  expect(approved).toMatchObject({ ok: true, status: 200, text: 'Approved by browser via push' });
  expect(approved.body).toMatchObject({ approval_id: a, decision: 'approve', actor: 'browser', via: 'push' });
  const cardA = card(page, a);
  await expect(cardA).toHaveAttribute('data-state', 'resolved');
  await expect(cardA).toHaveAttribute('data-decision', 'approve');
  await expect(toolResults(page, 'ok')).toHaveCount(1);
  await expect(toolResults(page, 'ok')).toContainText('notes/push.md');
  expect(readFileSync(join(server.workspace, 'notes/push.md'), 'utf8')).toBe('hello');

  // The closing push replaces the notification with the outcome.
  const [closingA] = await pushes(push, (m) => m.type === 'resolved' && m.approval_id === a);
  expectWellFormed(closingA);
  expect(closingA.message).toMatchObject({ tag: `gate-${a}`, body: 'Approved by browser via push', decision: 'approve' });
  expect(closingA.headers['topic']).toBe(pushA.headers['topic']);

  // The same capability again: already answered.
  const again = await worker(page, { type: 'countersign-test-action', msg: msgA, action: 'deny' });
  expect(again).toMatchObject({ ok: false, status: 409 });
  expect(again.text).toMatch(/^Already answered/);
  const againAnon = await answerAnonymously(server, msgA.capability, 'approve');
  expect(againAnon.status).toBe(409);
  expect(againAnon.body.error.code).toBe('already_resolved');
  await expect(cardA).toHaveAttribute('data-decision', 'approve');

  // Card B: A's capability answers A only; altered capabilities are not capabilities.
  const b = await openCard(page, 'write notes/b.md: bee');
  const msgB = (await gatePush(push, b)).message;
  expect(msgB.capability).not.toBe(msgA.capability);
  expect((await answerAnonymously(server, msgA.capability, 'approve')).status).toBe(409);
  const [prefix, bodyB, tagB] = msgB.capability.split('.');
  const tagA = msgA.capability.split('.')[2];
  // B's grant under A's MAC, a flipped character in the grant and in the MAC, B's grant
  // pointed at A (re-encoded, old MAC), a truncated one.
  const grantB = JSON.parse(unb64url(bodyB).toString());
  expect(grantB).toMatchObject({ s: sid, a: b, h: { k: 'subscription', v: sub.id } });
  const flip = (s: string, i: number) => s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1);
  const forged = [
    `${prefix}.${bodyB}.${tagA}`,
    `${prefix}.${flip(bodyB, 10)}.${tagB}`,
    `${prefix}.${bodyB}.${flip(tagB, 5)}`,
    `${prefix}.${b64url(Buffer.from(JSON.stringify({ ...grantB, a })))}.${tagB}`,
    `${prefix}.${b64url(Buffer.from(JSON.stringify({ ...grantB, e: grantB.e + 3600_000 })))}.${tagB}`,
    msgB.capability.slice(0, -3),
    `cs2.${bodyB}.${tagB}`,
  ];
  for (const capability of forged) {
    const res = await answerAnonymously(server, capability, 'approve');
    expect(res.status, capability).toBe(403);
    expect(res.body.error.code).toBe('invalid_capability');
  }
  // Only approve and deny.
  expect((await answerAnonymously(server, msgB.capability, 'allow_always')).status).toBe(400);
  await expect(card(page, b)).toHaveAttribute('data-state', 'pending');
  expect(existsSync(join(server.workspace, 'notes/b.md'))).toBe(false);
  // B's own capability denies B, from the notification.
  const denied = await worker(page, { type: 'countersign-test-action', msg: msgB, action: 'deny' });
  expect(denied).toMatchObject({ ok: true, status: 200, text: 'Denied by browser via push' });
  await expect(card(page, b)).toHaveAttribute('data-decision', 'deny');
  await pushes(push, (m) => m.type === 'resolved' && m.approval_id === b && m.body === 'Denied by browser via push');
  expect(existsSync(join(server.workspace, 'notes/b.md'))).toBe(false);

  // Card C: the file changes on disk after the push; the capability finds a changed card.
  const c = await openCard(page, 'write notes/c.md: from the card');
  const msgC = (await gatePush(push, c)).message;
  writeFileSync(join(server.workspace, 'notes/c.md'), 'changed on disk');
  const stale = await worker(page, { type: 'countersign-test-action', msg: msgC, action: 'approve' });
  expect(stale).toMatchObject({ ok: false, status: 409 });
  expect(stale.body.error.code).toBe('stale_digest');
  expect(stale.text).toBe('The card changed since this notification: open it to see it as it is now.');
  expect(readFileSync(join(server.workspace, 'notes/c.md'), 'utf8')).toBe('changed on disk');
  // The changed card is closed, and the turn puts the call again on a fresh card that shows
  // the file as it is now: C's capability can no longer answer anything.
  await expect(card(page, c)).toHaveAttribute('data-state', 'resolved');
  await expect(card(page, c)).toHaveAttribute('data-decision', 'cancelled');
  const staleAgain = await answerAnonymously(server, msgC.capability, 'approve');
  expect(staleAgain.status).toBe(410);
  expect(staleAgain.body.error.code).toBe('gone');
  expect(readFileSync(join(server.workspace, 'notes/c.md'), 'utf8')).toBe('changed on disk');
  await expect(pendingCards(page)).toHaveCount(1);
  const c2 = (await pendingCards(page).getAttribute('data-approval-id'))!;
  expect(c2).not.toBe(c);
  const msgC2 = (await gatePush(push, c2)).message;
  expect(msgC2.capability).not.toBe(msgC.capability);
  const fresh = await worker(page, { type: 'countersign-test-action', msg: msgC2, action: 'approve' });
  expect(fresh).toMatchObject({ ok: true, status: 200 });
  await expect(card(page, c2)).toHaveAttribute('data-decision', 'approve');
  await expect.poll(() => readFileSync(join(server.workspace, 'notes/c.md'), 'utf8')).toBe('from the card');

  // Every push of the test went to this one subscription, all signed by the server's key.
  for (const p of push.received) {
    expect(p.subscription).toBe(sub.fake.id);
    expect(p.vapid.k).toBe(key);
  }
});

test('a safety-floor card is pushed as sensitive, with no capability and no buttons', async ({ page, server, push }) => {
  await login(page, server);
  const session = page.url();
  const sid = sessionId(page);
  const sub = await subscribeThroughPage(page, server, push);
  await page.goto(session);
  await waitLive(page);

  const id = await openCard(page, 'write .env: SECRET=1');
  await expect(card(page, id)).toHaveClass(/\bfloor\b/);
  const p = await gatePush(push, id);
  expect(p.message).toMatchObject({
    type: 'gate', approval_id: id, session_id: sid, sensitive: true, capability: null, actions: [],
    url: `/sessions/${sid}#gate-${id}`,
  });
  expect(p.message.title).toMatch(/^SENSITIVE · Approval needed: /);
  // The payload carries no secret from the card.
  expect(p.raw.toString('latin1')).not.toContain('SECRET=1');

  const shown = await worker(page, { type: 'countersign-test-push', msg: p.message });
  expect(shown).toEqual({ title: p.message.title, actions: [], shown: 1 });

  // A capability the server would never mint for it (made here with the MAC key derived
  // from the access token) is still refused: a floor card is answered on the card.
  const waiting: any[] = await (await page.request.get(`${server.url}/api/v1/approvals`, { headers: auth(server) })).json();
  const pending = waiting.find((g) => g.approval_id === id);
  expect(pending, 'the floor card is pending').toBeDefined();
  expect(pending.reason).toBe('safety_floor');
  const digest: string = pending.digest;
  expect(digest).toMatch(/^[0-9a-f]{64}$/);
  const grant = b64url(Buffer.from(JSON.stringify({
    s: sid, a: id, d: digest, h: { k: 'subscription', v: sub.id }, e: Date.parse(p.message.expires_at),
  })));
  const mac = b64url(createHmac('sha256', `countersign-answer-capability:${server.token}`).update(grant).digest());
  const res = await answerAnonymously(server, `cs1.${grant}.${mac}`, 'approve');
  expect(res.status).toBe(403);
  expect(res.body.error.code).toBe('forbidden');
  await expect(card(page, id)).toHaveAttribute('data-state', 'pending');
  expect(existsSync(join(server.workspace, '.env'))).toBe(false);
});

test("a push service's 410 unsubscribes the device", async ({ page, server, push }) => {
  await login(page, server);
  const session = page.url();
  const sub = await subscribeThroughPage(page, server, push);
  const items = page.getByTestId('push-list').getByTestId('push-subscription');
  await expect(items).toHaveCount(1);

  // The browser dropped it: the push service answers 410 to the next push.
  sub.fake.status = 410;
  await page.getByTestId('push-test').click();
  await expect(page.getByTestId('push-status')).toContainText('Test not delivered: gone');
  await expect(page.getByTestId('push-status')).toHaveAttribute('data-problem', 'true');
  await expect(items).toHaveCount(0);
  await expect(page.getByTestId('push-on')).toBeVisible();
  expect(push.received).toHaveLength(1);
  expect(push.received[0].status).toBe(410);
  expect(push.received[0].message).toMatchObject({ type: 'test' });
  await page.reload();
  await expect(page.getByTestId('push-status')).toHaveText('This device is not notified yet.');
  await expect(items).toHaveCount(0);

  // A card waiting now is pushed to nobody.
  await page.goto(session);
  await waitLive(page);
  await openCard(page, 'write notes/nobody.md: x');
  await page.waitForTimeout(2_000);
  expect(push.received).toHaveLength(1);
});

test('a gate push answered 410 drops that device; the others still get theirs', async ({ page, server, push }) => {
  await login(page, server);
  const session = page.url();
  const sub = await subscribeThroughPage(page, server, push);
  // A second device of this browser's credential, subscribed through the API with the cookie.
  const other = push.subscribe();
  const res = await page.request.post(`${server.url}/api/v1/push/subscriptions`, {
    data: other.json, headers: { Origin: server.url },
  });
  expect(res.status(), await res.text()).toBe(201);
  await page.reload();
  await expect(page.getByTestId('push-list').getByTestId('push-subscription')).toHaveCount(2);

  sub.fake.status = 410;
  await page.goto(session);
  await waitLive(page);
  const id = await openCard(page, 'write notes/gone.md: x');
  await expect.poll(() => push.received.filter((p) => p.message?.approval_id === id).map((p) => p.subscription).sort(),
    { timeout: 30_000 }).toEqual([sub.fake.id, other.id].sort());
  await page.goto(`${server.url}/notify`);
  const items = page.getByTestId('push-list').getByTestId('push-subscription');
  await expect(items).toHaveCount(1);
  await expect(items.first()).not.toContainText('(this device)');
  // Its capability ended with it.
  const gone = push.messages((m) => m.type === 'gate' && m.approval_id === id).find((p) => p.subscription === sub.fake.id)!;
  const ended = await answerAnonymously(server, gone.message.capability, 'approve');
  expect(ended.status).toBe(410);
  expect(ended.body.error.code).toBe('capability_ended');
  // The other device's still answers.
  const kept = push.messages((m) => m.type === 'gate' && m.approval_id === id).find((p) => p.subscription === other.id)!;
  const ok = await answerAnonymously(server, kept.message.capability, 'approve');
  expect(ok.status).toBe(200);
  expect(ok.body.outcome).toBe('Approved by browser via push');
});

/** An API client with only this bearer token (no cookie). */
async function withToken(server: RunningServer, token: string) {
  return playwrightRequest.newContext({ extraHTTPHeaders: { Authorization: `Bearer ${token}` } });
}

test('a subscription answers as the token that made it; revoking the token ends its capabilities', async ({ page, server, push }) => {
  await login(page, server);
  const admin = await withToken(server, server.token);
  const made = await admin.post(`${server.url}/api/v1/tokens`, { data: { name: 'phone', scope: 'approve' } });
  expect(made.status(), await made.text()).toBe(201);
  const phone = await withToken(server, (await made.json()).token);
  const agentMade = await admin.post(`${server.url}/api/v1/tokens`, { data: { name: 'agent', scope: 'gates' } });
  const agent = await withToken(server, (await agentMade.json()).token);

  // A token that may not answer cards may not subscribe to them.
  const refused = await agent.post(`${server.url}/api/v1/push/subscriptions`, { data: push.subscribe().json });
  expect(refused.status()).toBe(403);

  const sub = push.subscribe();
  const res = await phone.post(`${server.url}/api/v1/push/subscriptions`, { data: sub.json });
  expect(res.status(), await res.text()).toBe(201);
  expect(await res.json()).toMatchObject({ credential: 'token:phone', push_service: '127.0.0.1' });

  const first = await openCard(page, 'write notes/phone.md: from the phone');
  const pushed = (await gatePush(push, first)).message;
  const answered = await answerAnonymously(server, pushed.capability, 'approve');
  expect(answered.status).toBe(200);
  expect(answered.body).toMatchObject({ actor: 'token:phone', via: 'push', outcome: 'Approved by token:phone via push' });
  await expect(card(page, first)).toHaveAttribute('data-decision', 'approve');
  await pushes(push, (m) => m.type === 'resolved' && m.approval_id === first && m.body === 'Approved by token:phone via push');

  const second = await openCard(page, 'write notes/phone2.md: not any more');
  const pushed2 = (await gatePush(push, second)).message;
  expect((await admin.delete(`${server.url}/api/v1/tokens/phone`)).status()).toBe(204);
  const ended = await answerAnonymously(server, pushed2.capability, 'approve');
  expect(ended.status).toBe(410);
  expect(ended.body.error.code).toBe('capability_ended');
  await expect(card(page, second)).toHaveAttribute('data-state', 'pending');
  expect(existsSync(join(server.workspace, 'notes/phone2.md'))).toBe(false);
  for (const client of [admin, phone, agent]) await client.dispose();
});

// The startup token is no row of the tokens table: its subscriptions still get every card's
// push and answer as `token:admin`.
test("a subscription made with the startup token gets the cards' pushes", async ({ page, server, push }) => {
  await login(page, server);
  const admin = await withToken(server, server.token);
  const sub = push.subscribe();
  const res = await admin.post(`${server.url}/api/v1/push/subscriptions`, { data: sub.json });
  expect(res.status(), await res.text()).toBe(201);
  expect(await res.json()).toMatchObject({ credential: 'token:admin' });
  const id = await openCard(page, 'write notes/admin.md: x');
  const pushed = (await gatePush(push, id)).message;
  const answered = await answerAnonymously(server, pushed.capability, 'approve');
  expect(answered.status).toBe(200);
  expect(answered.body).toMatchObject({ actor: 'token:admin', via: 'push' });
  await admin.dispose();
});
