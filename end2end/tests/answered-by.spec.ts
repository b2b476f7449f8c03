// Who answered, in a person's words (issue 39.5), and a card answered on a phone says what was
// done (39.10): two tabs of one browser login read "by you, in this tab" and "by you, in
// another tab"; a phone logged in with its `phone` token answers from the Inbox, which keeps
// saying what came of it, while the desktop reads "by you, on Chrome on Pixel 8 (token phone)";
// the Audit names the credential and the browser login's device, never a bare `browser`.
import { expect, Page } from '@playwright/test';
import { login, pendingCards, send, test, waitHydrated, waitLive } from './helpers';
import { RunningServer } from './server';

const PIXEL =
  'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36';

/** A new `approve` token named `phone`; its secret. */
async function phoneToken(page: Page, server: RunningServer): Promise<string> {
  const made = await page.request.post(`${server.url}/api/v1/tokens`, {
    headers: { Authorization: `Bearer ${server.token}` },
    data: { name: 'phone', scope: 'approve' },
  });
  expect(made.status(), await made.text()).toBe(201);
  return (await made.json()).token;
}

test('two tabs of one browser: the one that answered says "in this tab", the other "in another tab"', async ({ page, context, server }) => {
  await login(page, server);
  const other = await context.newPage();
  await other.goto(page.url());
  await waitLive(other);
  await send(page, 'run: echo answered-in-a-tab');
  await expect(pendingCards(page)).toHaveCount(1);
  await expect(pendingCards(other)).toHaveCount(1);
  await pendingCards(page).locator('[data-action=approve]').click();

  const here = page.locator('[data-testid=approval-card][data-state=resolved]');
  const there = other.locator('[data-testid=approval-card][data-state=resolved]');
  await expect(here.getByTestId('card-outcome')).toContainText('Approved by you, in this tab');
  await expect(there.getByTestId('card-outcome')).toContainText('Approved by you, in another tab');
  // Each tab keeps its own id across a reload; the server's render (no tab yet) already
  // knows it was this browser.
  await other.reload();
  await waitLive(other);
  await expect(there.getByTestId('card-outcome')).toContainText('Approved by you, in another tab');
  await expect(here.getByTestId('card-outcome')).not.toContainText('another');
});

test('a phone answers with its token: the desktop names it, the phone says what was done, the Audit names both', async ({ page, browser, server }) => {
  await login(page, server);
  const secret = await phoneToken(page, server);
  const phoneContext = await browser.newContext({
    viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, userAgent: PIXEL,
  });
  try {
    const phone = await phoneContext.newPage();
    await phone.goto(`${server.url}/login?token=${secret}`);
    await expect(phone).toHaveURL(`${server.url}/inbox`);
    await waitHydrated(phone);

    // The desktop answers one itself first.
    await send(page, 'run: echo from-the-desk');
    await pendingCards(page).locator('[data-action=approve]').click();
    await expect(page.locator('[data-testid=tool-result][data-status=ok]')).toHaveCount(1);

    await send(page, 'run: echo from-the-phone');
    // Only once the desktop's own card has left the phone's Inbox.
    const mine = pendingCards(phone);
    await expect(mine).toHaveCount(1);
    await expect(mine).toContainText('echo from-the-phone');
    await mine.locator('[data-action=approve]').tap();
    // The phone: the card leaves the Inbox, and what was done stays said.
    const done = phone.getByTestId('answered-here');
    await expect(done).toHaveCount(1);
    await expect(done).toHaveAttribute('data-decision', 'approve');
    await expect(done.getByTestId('answered-here-outcome')).toHaveText('Approved by you, in this tab');
    await expect(done).toContainText('echo from-the-phone');
    await expect(phone.getByTestId('inbox-empty')).toBeVisible();
    await expect(done).toBeVisible();
    await expect(done.getByTestId('answered-here-link')).toHaveAttribute('href', /\/sessions\/[0-9a-f-]{36}#gate-/);

    // The desktop: which phone, and which token.
    const resolved = page.locator('[data-testid=approval-card][data-state=resolved]').last();
    await expect(resolved.getByTestId('card-outcome')).toContainText('Approved by you, on Chrome on Pixel 8 (token phone)');
    await expect(page.locator('[data-testid=tool-result][data-status=ok]')).toHaveCount(2);

    // A denial on the phone says so too, newest first.
    await send(page, 'run: echo not-this-one');
    await expect(mine).toHaveCount(1);
    await expect(mine).toContainText('echo not-this-one');
    await mine.locator('[data-action=deny]').tap();
    await phone.getByTestId('deny-reason').fill('not now');
    await phone.getByTestId('deny-reason').press('Enter');
    await expect(done).toHaveCount(2);
    await expect(done.first()).toHaveAttribute('data-decision', 'deny');
    await expect(done.first().getByTestId('answered-here-outcome')).toHaveText('Denied by you, in this tab — not now');
    await expect(done.first()).toContainText('echo not-this-one');
    await expect(page.locator('[data-testid=approval-card][data-decision=deny]').getByTestId('card-outcome'))
      .toContainText('Denied by you, on Chrome on Pixel 8 (token phone) — not now');

    // The Audit: the credential and the browser login's device, never a bare `browser`.
    await page.goto(`${server.url}/audit`);
    await waitHydrated(page);
    const answers = page.locator('[data-testid=audit-row][data-action=gate_resolved] [data-testid=audit-row-actor]');
    await expect(answers).toHaveCount(3);
    await expect(answers.filter({ hasText: 'token phone · Chrome on Pixel 8' })).toHaveCount(2);
    await expect(answers.filter({ hasText: 'browser login · Chrome on Linux' })).toHaveCount(1);
    await expect(page.getByTestId('audit-row-actor').filter({ hasText: /^\s*browser\s*$/ })).toHaveCount(0);
  } finally {
    await phoneContext.close();
  }
});
