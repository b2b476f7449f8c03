// Many cards at once (issue 39.7): the Inbox is a compact list, one line a card, opened in
// place from the keyboard (↑/↓, Enter, Escape); its bulk bar takes only cards whose line is the
// whole call (commands, reads), never a sensitive card nor one to read in full (a write shows
// only its path), and after answering names and links to the ones it left. A batch focuses its first call, not its last
// arrival. On a phone, a waiting card out of sight is pointed at by a "1 waiting ↓" pill.
import { expect, Page } from '@playwright/test';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { card, login, pendingCards, send, sessionId, test, toolResults, waitHydrated, waitLive } from './helpers';

/** The approval ids of the pending cards, in page order. */
async function pendingIds(page: Page, n: number): Promise<string[]> {
  await expect(pendingCards(page)).toHaveCount(n);
  return pendingCards(page).evaluateAll((els) => els.map((e) => e.getAttribute('data-approval-id')!));
}

/** The pending card whose summary names `file`. */
async function idOf(page: Page, file: string): Promise<string> {
  const found = pendingCards(page).filter({ has: page.getByTestId('card-summary').filter({ hasText: file }) });
  await expect(found).toHaveCount(1);
  return (await found.getAttribute('data-approval-id'))!;
}

/** The batch's three cards (the two plain writes and the sensitive `.env`), and the page's order. */
async function batchIds(page: Page) {
  const order = await pendingIds(page, 3);
  const [one, two, env] = [await idOf(page, 'list-1.txt'), await idOf(page, 'list-2.txt'), await idOf(page, '.env')];
  return { one, two, env, order };
}

function row(page: Page, id: string) {
  return page.locator(`[data-testid=inbox-item][data-approval-id="${id}"]`);
}

const BATCH = 'parallel:\nwrite list-1.txt: 1\nwrite list-2.txt: 2\nwrite .env: SECRET=1';

test('the Inbox lists a batch one line each; arrows and Enter open a card in place, and Approve works there', async ({ page, server }) => {
  await login(page, server);
  const sid = sessionId(page);
  await send(page, BATCH);
  const { one, two, env, order } = await batchIds(page);
  // The batch's first card in the page's (call) order has focus, not the last to arrive.
  await expect(card(page, order[0])).toBeFocused();
  await expect(card(page, env)).toHaveClass(/\bfloor\b/);

  await page.goto(`${server.url}/inbox`);
  await waitHydrated(page);
  const items = page.getByTestId('inbox-item');
  await expect(items).toHaveCount(3);
  expect((await items.evaluateAll((els) => els.map((e) => e.getAttribute('data-approval-id')))).sort()).toEqual([one, two, env].sort());
  // One line each: the line, not the card, is what shows.
  for (const id of [one, two, env]) {
    const line = row(page, id).getByTestId('inbox-row');
    await expect(line).toBeVisible();
    expect((await line.boundingBox())!.height).toBeLessThan(50);
    await expect(card(page, id)).toBeHidden();
  }
  await expect(row(page, one).getByTestId('inbox-kind')).toHaveText('Write');
  await expect(row(page, one).getByTestId('inbox-summary')).toContainText('list-1.txt');
  await expect(row(page, one).getByTestId('inbox-when')).toHaveText(/^asked (just now|\d+ min ago) · \d\d:\d\d · \d+:\d\d left$/);
  await expect(row(page, one).getByTestId('inbox-session')).toHaveAttribute('href', `/sessions/${sid}`);
  // The sensitive card says so; neither it nor a write (its line shows the path, never the
  // content) can be picked for a bulk answer, and the empty box's place says why on hover.
  await expect(row(page, env).getByTestId('inbox-sensitive')).toHaveText('Sensitive');
  await expect(row(page, env).getByTestId('inbox-pick')).toHaveCount(0);
  await expect(row(page, one).getByTestId('inbox-pick')).toHaveCount(0);
  await expect(row(page, one).locator('.inbox-pick-space')).toHaveAttribute('title', 'Open it and read it in full to answer it');
  await expect(row(page, env).locator('.inbox-pick-space')).toHaveAttribute('title', 'Sensitive: answer it on its own');

  // ↓ moves between lines; Enter opens one in place with its card focused; Escape closes it.
  const listed = await items.evaluateAll((els) => els.map((e) => e.getAttribute('data-approval-id')!));
  const line = (at: number) => row(page, listed[at]).getByTestId('inbox-row');
  await line(0).focus();
  await page.keyboard.press('ArrowDown');
  await expect(line(1)).toBeFocused();
  await page.keyboard.press('End');
  await expect(line(2)).toBeFocused();
  await page.keyboard.press('ArrowDown');
  await expect(line(2)).toBeFocused();
  await page.keyboard.press('Home');
  await expect(line(0)).toBeFocused();
  await page.keyboard.press('Enter');
  await expect(card(page, listed[0])).toBeVisible();
  await expect(card(page, listed[0])).toBeFocused();
  await page.keyboard.press('Escape');
  await expect(card(page, listed[0])).toBeHidden();
  await expect(line(0)).toBeFocused();
  // To the second plain write's line, open it, and approve it there.
  const at = listed.indexOf(two);
  for (let i = 0; i < at; i++) await page.keyboard.press('ArrowDown');
  await expect(line(at)).toBeFocused();
  await page.keyboard.press('Enter');
  await expect(card(page, two)).toBeFocused();
  await card(page, two).locator('[data-action=approve]').click();
  await expect(row(page, two)).toHaveCount(0);
  await expect.poll(() => existsSync(join(server.workspace, 'list-2.txt'))).toBe(true);
});

/** Two commands, a plain write and the sensitive `.env` write: only the commands are pickable. */
const MIXED_BATCH = 'parallel:\nrun: echo one\nrun: echo two\nwrite list-1.txt: 1\nwrite .env: SECRET=1';

/** The approval id of the Inbox row whose line names `text`. */
async function rowIdOf(page: Page, text: string): Promise<string> {
  const found = page.getByTestId('inbox-item').filter({ has: page.getByTestId('inbox-summary').filter({ hasText: text }) });
  await expect(found).toHaveCount(1);
  return (await found.getAttribute('data-approval-id'))!;
}

test('the bulk bar answers only the commands, and names and links to the write and the sensitive card it left', async ({ page, server }) => {
  await login(page, server);
  const sid = sessionId(page);
  await send(page, MIXED_BATCH);
  await pendingIds(page, 4);
  await page.goto(`${server.url}/inbox`);
  await waitHydrated(page);
  await expect(page.getByTestId('inbox-item')).toHaveCount(4);
  const [one, two, write, env] = [
    await rowIdOf(page, 'echo one'), await rowIdOf(page, 'echo two'), await rowIdOf(page, 'list-1.txt'), await rowIdOf(page, '.env'),
  ];
  for (const id of [one, two]) await expect(row(page, id).getByTestId('inbox-pick')).toBeVisible();
  for (const id of [write, env]) await expect(row(page, id).getByTestId('inbox-pick')).toHaveCount(0);
  const bar = page.getByTestId('bulk-bar');
  await expect(bar.getByTestId('bulk-sensitive')).toHaveText('1 sensitive, 1 to read in full: answer them yourself');
  await expect(bar.locator('.inbox-pick-all')).toHaveText('Select the others');
  await expect(bar.locator('[data-action=approve-selected]')).toBeDisabled();
  await bar.getByTestId('pick-all').check();
  await expect(bar.getByTestId('bulk-picked')).toHaveText('2 of 4 selected');
  await bar.locator('[data-action=approve-selected]').click();
  await expect(page.getByTestId('bulk-said')).toHaveText('2 approved');
  await expect(page.getByTestId('inbox-item')).toHaveCount(2);
  for (const id of [write, env]) await expect(row(page, id)).toHaveCount(1);
  // What it left is named with its reason, and each link opens that card and focuses it.
  const left = page.getByTestId('left-for-you');
  await expect(left).toContainText('Left for you: 1 sensitive card, 1 card to read in full — ');
  await expect(left).toContainText('list-1.txt');
  await expect(left).toContainText('.env');
  const link = (id: string) => left.locator(`[data-testid=left-for-you-link][data-approval-id="${id}"]`);
  await expect(link(write)).toHaveAttribute('data-left-reason', 'read_in_full');
  await expect(link(env)).toHaveAttribute('data-left-reason', 'sensitive');
  await expect(left).toContainText('(to read in full)');
  await expect(left).toContainText('(sensitive)');
  await link(write).click();
  await expect(card(page, write)).toBeVisible();
  await expect(card(page, write)).toBeFocused();
  await link(env).click();
  await expect(card(page, env)).toBeVisible();
  await expect(card(page, env)).toBeFocused();
  for (const id of [one, two]) await expect(card(page, id)).toHaveCount(0);
  // The two commands ran; neither file was written.
  await page.goto(`${server.url}/sessions/${sid}`);
  await waitLive(page);
  await expect(toolResults(page, 'ok')).toHaveCount(2);
  await expect(toolResults(page, 'ok').filter({ hasText: 'echo one' })).toHaveCount(1);
  await expect(toolResults(page, 'ok').filter({ hasText: 'echo two' })).toHaveCount(1);
  await expect(pendingCards(page)).toHaveCount(2);
  expect(existsSync(join(server.workspace, 'list-1.txt'))).toBe(false);
  expect(existsSync(join(server.workspace, '.env'))).toBe(false);
});

test('a batch that opens while the Inbox is open focuses its first line', async ({ page, server }) => {
  await login(page, server);
  const sid = sessionId(page);
  await page.goto(`${server.url}/inbox`);
  await waitHydrated(page);
  await expect(page.getByTestId('inbox-empty')).toBeVisible();
  const sent = await page.request.post(`${server.url}/api/v1/sessions/${sid}/messages`, {
    headers: { Authorization: `Bearer ${server.token}` },
    data: { text: 'parallel:\nwrite arrive-1.txt: 1\nwrite arrive-2.txt: 2\nwrite arrive-3.txt: 3' },
  });
  expect(sent.status()).toBe(202);
  const items = page.getByTestId('inbox-item');
  await expect(items).toHaveCount(3);
  // The first line of the batch (the list's order), whichever card arrived last.
  await expect(items.first().getByTestId('inbox-row')).toBeFocused();
});

test('on a phone, a waiting card out of sight gets a pill that brings it into view', async ({ browser, page, server }) => {
  await login(page, server);
  const sid = sessionId(page);
  const headers = { Authorization: `Bearer ${server.token}` };
  // A long transcript: forty calls run in Yolo, then a card waits.
  const long = await page.request.post(`${server.url}/api/v1/sessions/${sid}/messages`, {
    headers, data: { text: 'loop 40', approval_mode: 'yolo' },
  });
  expect(long.status()).toBe(202);
  await expect(page.locator('[data-testid=tool-result][data-status=ok]')).toHaveCount(40, { timeout: 30_000 });
  // Sent once the long turn has ended (a session takes one turn at a time).
  await expect.poll(async () => (await page.request.post(`${server.url}/api/v1/sessions/${sid}/messages`, {
    headers, data: { text: 'write pill-1.txt: 1', approval_mode: 'ask' },
  })).status(), { timeout: 30_000 }).toBe(202);
  const [one] = await pendingIds(page, 1);

  for (const viewport of [{ width: 390, height: 844 }, { width: 640, height: 400 }]) {
    const phone = await browser.newContext({ viewport, deviceScaleFactor: 2 });
    const p = await phone.newPage();
    await p.goto(`${server.url}/login?token=${server.token}`);
    await p.goto(`${server.url}/sessions/${sid}`);
    await waitLive(p);
    // The person scrolls back up to read the start of the session.
    await p.evaluate(() => { window.scrollTo(0, 0); document.getElementById('transcript')!.scrollTop = 0; });
    const pill = p.getByTestId('waiting-pill');
    await expect(pill).toHaveText('1 waiting ↓');
    await expect(pill).toBeInViewport();
    await expect(card(p, one)).not.toBeInViewport();
    await pill.click();
    await expect(card(p, one)).toBeInViewport();
    await expect(card(p, one)).toBeFocused();
    await expect(pill).toHaveCount(0);
    await phone.close();
  }
});
