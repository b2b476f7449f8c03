// The server-wide change stream is one connection per browser, not per tab: the tabs elect a
// holder (a Web Lock) that relays what it hears to the others (a BroadcastChannel). Over
// HTTP/1.1 Chromium opens at most six connections to a host, and a session tab already holds
// its own feed: with a change stream per tab, three session tabs took all six and every other
// request from any tab waited. Also: a session in Yolo is marked in every tab's sidebar.
import { BrowserContext, expect, Page, Request } from '@playwright/test';
import { chooseMode, login, newSession, send, sessionId, test, toolResults, waitHydrated, waitLive } from './helpers';

/** A session's entry in a tab's sidebar. */
function listed(page: Page, sid: string) {
  return page.locator(`[data-testid=session-item][data-session-id="${sid}"]`);
}

function isChangeStream(request: Request) {
  return new URL(request.url()).pathname === '/api/v1/changes';
}

/**
 * How many change streams the context's tabs hold at once (`open`), the most ever (`max`), and
 * the tab that opened the latest (`holder`).
 */
function watchChangeStreams(context: BrowserContext) {
  const streams: { open: number; max: number; holder?: Page } = { open: 0, max: 0 };
  context.on('request', (request) => {
    if (!isChangeStream(request)) return;
    streams.open += 1;
    streams.max = Math.max(streams.max, streams.open);
    streams.holder = request.frame().page();
  });
  const ended = (request: Request) => {
    if (isChangeStream(request)) streams.open -= 1;
  };
  context.on('requestfinished', ended);
  context.on('requestfailed', ended);
  return streams;
}

async function openTab(context: BrowserContext, url: string) {
  const tab = await context.newPage();
  await tab.goto(url);
  return tab;
}

test('the tabs share one change stream, so many tabs leave connections for requests', async ({ page, server }) => {
  const context = page.context();
  const streams = watchChangeStreams(context);
  await login(page, server);
  const first = sessionId(page);
  const sessionUrl = `${server.url}/sessions/${first}`;
  // Three session tabs (three feeds) and the Inbox: with a stream per tab that is seven
  // connections, and the Inbox never loads. With one shared stream it is four.
  const tabs = [page];
  for (let i = 0; i < 2; i++) {
    const tab = await openTab(context, sessionUrl);
    await waitLive(tab);
    tabs.push(tab);
  }
  const inbox = await openTab(context, `${server.url}/inbox`);
  await waitHydrated(inbox);
  tabs.push(inbox);

  // A fifth tab (a fifth connection, its feed) makes a session and talks in it: every
  // request gets the one connection left, and completes.
  const fifth = await openTab(context, sessionUrl);
  await waitLive(fifth);
  await newSession(fifth);
  const created = sessionId(fifth);
  await send(fifth, 'list');
  await expect(toolResults(fifth, 'ok')).toHaveCount(1);

  // The notice reached every other tab through the shared stream.
  for (const tab of tabs) {
    await expect(listed(tab, created)).toBeVisible({ timeout: 10_000 });
  }
  expect(streams.max, 'one change stream for the whole browser').toBe(1);

  // The first tab asked for the stream first, so it holds it: when it closes, another tab
  // takes it over.
  expect(streams.holder, 'the first tab holds the stream').toBe(page);
  const handedOver = context.waitForEvent('response', { predicate: (r) => isChangeStream(r.request()) });
  await page.close();
  await handedOver;
  const remaining = tabs.slice(1);
  await newSession(fifth);
  const another = sessionId(fifth);
  expect(another).not.toBe(created);
  for (const tab of remaining) {
    await expect(listed(tab, another)).toBeVisible({ timeout: 10_000 });
  }
});

test('a session in Yolo is marked in the sidebar of another tab, one in Ask is not', async ({ page, server }) => {
  await login(page, server);
  const asking = sessionId(page);
  // A card waits in the session that asks: its dot says how many.
  await send(page, 'write notes.md: hello');
  const other = await openTab(page.context(), `${server.url}/sessions/${asking}`);
  await waitLive(other);
  const dot = listed(other, asking).getByTestId('session-pending');
  await expect(dot).toHaveAttribute('aria-label', '1 card waiting');
  await expect(dot).toHaveAttribute('title', '1 card waiting');

  await newSession(page);
  const yolo = sessionId(page);
  await chooseMode(page, 'yolo');

  const badge = listed(other, yolo).getByTestId('session-yolo');
  await expect(badge).toBeVisible({ timeout: 10_000 });
  await expect(badge).toHaveText('Yolo');
  await expect(badge).toHaveAttribute('data-mode', 'yolo');
  await expect(badge).toHaveAttribute('aria-label', /runs in Yolo: edits and commands run without asking/);
  await expect(listed(other, asking).getByTestId('session-yolo')).toHaveCount(0);
  // And in the tab that chose it.
  await expect(listed(page, yolo).getByTestId('session-yolo')).toBeVisible();
  await expect(listed(page, asking).getByTestId('session-yolo')).toHaveCount(0);
});

/** Makes the page look hidden (or shown again) to its script, as a tab in the background. */
async function setHidden(page: Page, hidden: boolean) {
  await page.evaluate((hidden) => {
    Object.defineProperty(document, 'hidden', { configurable: true, get: () => hidden });
    Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => (hidden ? 'hidden' : 'visible') });
    document.dispatchEvent(new Event('visibilitychange'));
  }, hidden);
}

// Where the browser has no Web Locks (a plain `http://` LAN address is no secure context), each
// tab holds its own stream, but only while it is shown: a hidden tab lets go of it, and when
// it is shown again it opens one and catches up on what changed meanwhile.
test('without Web Locks a hidden tab lets go of its stream and catches up when shown', async ({ page, server }) => {
  const context = page.context();
  await context.addInitScript(() => {
    Object.defineProperty(Navigator.prototype, 'locks', { configurable: true, get: () => undefined });
  });
  const streams = watchChangeStreams(context);
  await login(page, server);
  const first = sessionId(page);
  const other = await openTab(context, `${server.url}/sessions/${first}`);
  await waitLive(other);
  // Two tabs, two streams of their own.
  await expect.poll(() => streams.open).toBe(2);

  await setHidden(other, true);
  await expect.poll(() => streams.open).toBe(1);
  // While it is hidden a session is made elsewhere; shown again, the tab opens a stream and
  // lists the session.
  await newSession(page);
  const made = sessionId(page);
  await setHidden(other, false);
  await expect.poll(() => streams.open).toBe(2);
  await expect(listed(other, made)).toBeVisible({ timeout: 10_000 });
});
