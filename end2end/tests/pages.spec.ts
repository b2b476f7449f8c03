// The pages beside the chat: the Inbox decides gates of any session in place and follows
// answers given elsewhere; Rules lists what Always allow created and revokes it; Audit shows
// the hash-chained log with its verify badge, filters and export.
//
// The Inbox count, the inbox list and the rules table are global to a server, so each test
// gets a server of its own (the `server` fixture): what one test leaves pending cannot change
// what another sees, whatever order they run in.
import { expect, Page } from '@playwright/test';
import { login, newSession, pendingCards, send, test, waitHydrated, waitLive } from './helpers';

function okResults(page: Page) {
  return page.locator('[data-testid=tool-result][data-status=ok]');
}

test('approve from the Inbox while the chat is open in another tab', async ({ page, context, server }) => {
  await login(page, server);
  await newSession(page);
  const sessionPath = new URL(page.url()).pathname;
  await send(page, 'run: echo from-inbox');
  await expect(pendingCards(page)).toHaveCount(1);
  const id = await pendingCards(page).getAttribute('data-approval-id');

  const inbox = await context.newPage();
  await inbox.goto(`${server.url}/inbox`);
  await waitHydrated(inbox);
  const item = inbox.getByTestId('inbox-item');
  await expect(item).toHaveCount(1);
  await expect(item).toHaveAttribute('data-approval-id', id!);
  await expect(item.getByTestId('inbox-session')).toHaveAttribute('href', sessionPath);
  await expect(item.getByTestId('card-summary')).toHaveText('shell: echo from-inbox');
  await expect(item.getByTestId('countdown')).toHaveText(/^denies in \d+:\d\d$/);
  await expect(inbox.getByTestId('nav-inbox')).toHaveText('Inbox (1)');
  await expect(inbox).toHaveTitle('(1) Inbox — Countersign');

  await item.locator('[data-action=approve]').click();
  // Answered here: it leaves the inbox...
  await expect(inbox.getByTestId('inbox-item')).toHaveCount(0);
  await expect(inbox.getByTestId('inbox-empty')).toContainText('Nothing waiting for you.');
  await expect(inbox.getByTestId('nav-inbox')).toHaveText('Inbox (0)');
  // ...and the chat tab shows it resolved, live, and the command ran.
  const card = page.locator(`[data-testid=approval-card][data-approval-id="${id}"]`);
  await expect(card).toHaveAttribute('data-state', 'resolved');
  await expect(card).toHaveAttribute('data-decision', 'approve');
  await expect(card.getByTestId('card-outcome')).toContainText('in another tab');
  await expect(okResults(page)).toContainText('echo from-inbox');

  // A gate that opens while the inbox is open appears there; answered in the chat, it leaves.
  // (Playwright acts slowly on a tab in the background: bring the one it acts on to the front.)
  await page.bringToFront();
  await send(page, 'run: echo answered-in-chat');
  await expect(inbox.getByTestId('inbox-item')).toHaveCount(1);
  await expect(inbox.getByTestId('card-summary')).toHaveText('shell: echo answered-in-chat');
  await pendingCards(page).locator('[data-action=approve]').click();
  await expect(okResults(page)).toHaveCount(2);
  await expect(inbox.getByTestId('inbox-item')).toHaveCount(0, { timeout: 6_000 });
  await expect(inbox.getByTestId('inbox-empty')).toBeVisible();

  // The session link goes to the chat.
  await send(page, 'run: echo follow-the-link');
  await inbox.bringToFront();
  await inbox.getByTestId('inbox-session').click();
  await expect(inbox).toHaveURL(new RegExp(`${sessionPath}$`));
  await waitLive(inbox);
  await expect(pendingCards(inbox)).toHaveCount(1);
  await pendingCards(inbox).locator('[data-action=deny]').click();
  await inbox.getByTestId('deny-reason').press('Enter');
  await expect(pendingCards(inbox)).toHaveCount(0);
});

test('a rule made by Always allow shows on Rules; Revoke removes it and the call asks again', async ({ page, server }) => {
  await login(page, server);
  await newSession(page);
  const sessionPath = new URL(page.url()).pathname;
  await send(page, 'run: echo ruled one');
  const card = pendingCards(page);
  await card.locator('[data-action=allow_always]').click();
  await expect(card.getByTestId('rule-pattern')).toHaveValue('echo *');
  await card.locator('[data-action=submit-always]').click();
  await expect(page.locator('[data-testid=approval-card]')).toHaveAttribute('data-decision', 'allow_always');
  await expect(okResults(page)).toHaveCount(1);
  // The rule covers the next echo: it runs without a card.
  await send(page, 'run: echo ruled two');
  await expect(okResults(page)).toHaveCount(2);
  await expect(pendingCards(page)).toHaveCount(0);

  await page.getByTestId('nav-rules').click();
  await expect(page).toHaveURL(/\/rules$/);
  const row = page.getByTestId('rule-row');
  await expect(row).toHaveCount(1);
  await expect(row).toContainText('shell');
  await expect(row.getByTestId('rule-pattern-cell')).toHaveText('echo *');
  await expect(row.getByTestId('rule-uses')).toHaveText('1');
  await expect(row.getByTestId('rule-session')).toHaveAttribute('href', sessionPath);
  await expect(row).toContainText('from approval');
  await expect(page.getByTestId('nav-rules')).toHaveAttribute('aria-current', 'page');

  await row.getByTestId('revoke-rule').click();
  await expect(page.getByTestId('rule-row')).toHaveCount(0);
  await expect(page.getByTestId('rules-empty')).toBeVisible();
  await page.reload();
  await waitHydrated(page);
  await expect(page.getByTestId('rules-empty')).toBeVisible();

  // Without the rule, the same kind of call asks again.
  await page.goto(server.url + sessionPath);
  await waitLive(page);
  await send(page, 'run: echo ruled three');
  await expect(pendingCards(page)).toHaveCount(1);
  await pendingCards(page).locator('[data-action=approve]').click();
  await expect(okResults(page)).toHaveCount(3);
});

test('Audit lists gates opened and resolved, filters them, and says the chain is intact', async ({ page, server }) => {
  await login(page, server);
  await newSession(page);
  await send(page, 'run: echo audited');
  await expect(pendingCards(page)).toHaveCount(1);
  const id = await pendingCards(page).getAttribute('data-approval-id');
  await pendingCards(page).locator('[data-action=approve]').click();
  await expect(okResults(page)).toHaveCount(1);

  await page.goto(`${server.url}/audit`);
  await waitHydrated(page);
  await expect(page.getByTestId('audit-verify')).toHaveText(/^Chain intact · \d+ entries$/);
  await expect(page.getByTestId('audit-verify')).toHaveAttribute('data-state', 'intact');
  const rows = page.getByTestId('audit-row');
  await expect(rows.first()).toBeVisible();
  expect(await page.locator('[data-testid=audit-row][data-action=gate_opened]').count()).toBeGreaterThan(0);
  expect(await page.locator('[data-testid=audit-row][data-action=gate_resolved]').count()).toBeGreaterThan(0);
  // Newest first.
  const ns = (await rows.evaluateAll((trs) => trs.map((tr) => Number(tr.getAttribute('data-n')))));
  expect(ns).toEqual([...ns].sort((a, b) => b - a));

  // The subject filter narrows to this gate: resolved by a person, after the agent opened it.
  await page.getByTestId('audit-subject').fill(id!);
  await expect(rows).toHaveCount(2);
  await expect(rows.nth(1)).toHaveAttribute('data-action', 'gate_opened');
  await expect(rows.nth(1)).toContainText('agent');
  await expect(rows.nth(0)).toHaveAttribute('data-action', 'gate_resolved');
  await expect(rows.nth(0)).toContainText('browser');
  await expect(rows.nth(0)).toContainText('decision: approve');

  // The action filter asks the server; the export link follows it.
  await page.getByTestId('audit-subject').fill('');
  await page.getByTestId('audit-action').selectOption('gate_resolved');
  await expect(page.locator('[data-testid=audit-row][data-action=gate_opened]')).toHaveCount(0);
  await expect(page.locator('[data-testid=audit-row][data-action=gate_resolved]').first()).toBeVisible();
  await expect(page.getByTestId('audit-export')).toHaveAttribute('href', '/api/v1/audit?action=gate_resolved');
  await page.getByTestId('audit-action').selectOption('');
  await expect(page.getByTestId('audit-export')).toHaveAttribute('href', '/api/v1/audit');

  // Export: the logged-in browser may GET the JSON.
  const res = await page.request.get(`${server.url}/api/v1/audit`);
  expect(res.ok()).toBeTruthy();
  const entries = await res.json();
  expect(entries.some((e: { subject: string; action: string }) => e.subject === id && e.action === 'gate_resolved')).toBe(true);

  // Nothing older: Load older says so.
  await page.getByTestId('audit-more').click();
  await expect(page.getByText('No older entries.')).toBeVisible();
});
