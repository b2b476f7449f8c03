// Answerable before (and without) the bundle: the session page and the Inbox are whole HTML
// from the server, and each card is a form — Approve, and Deny with a reason, work with
// JavaScript off and land back where they came from. On a phone-sized screen.
import { expect } from '@playwright/test';
import { card, login, pendingCards, send, test, toolResults } from './helpers';

test('with JavaScript off, a card is approved on the session page and denied with a reason on the Inbox', async ({ browser, page, server }) => {
  await login(page, server);
  const sessionUrl = page.url();
  await send(page, 'run: echo approved-without-script\nrun: echo denied-without-script');
  await expect(pendingCards(page)).toHaveCount(1);
  const first = (await pendingCards(page).getAttribute('data-approval-id'))!;

  const phone = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 390, height: 844 } });
  const p = await phone.newPage();
  await p.goto(`${server.url}/login?token=${server.token}`);
  await p.goto(sessionUrl);
  const c = card(p, first);
  await expect(c).toHaveAttribute('data-state', 'pending');
  await expect(c.getByTestId('card-summary')).toHaveText('shell: echo approved-without-script');
  // Only what a form can do is offered: Approve and Deny…; Edit and Always allow need the script.
  await expect(c.locator('[data-action=edit]')).toBeHidden();
  await expect(c.locator('[data-action=allow_always]')).toBeHidden();
  await expect(c.getByTestId('countdown')).toHaveText(/^denies at \d\d:\d\d UTC$/);
  await c.locator('[data-action=approve]').click();
  // Back on the same page, drawn again by the server: the card is answered, the call ran.
  await expect(p).toHaveURL(new RegExp(`/sessions/[0-9a-f-]+#gate-${first}$`));
  await expect(card(p, first)).toHaveAttribute('data-state', 'resolved');
  // Drawn by the server for this browser's login: its own form's answer (no tab to name).
  await expect(card(p, first).getByTestId('card-outcome')).toContainText('Approved by you, in this browser');
  await expect(toolResults(page, 'ok')).toHaveCount(1);
  // Another browser login (this context's is not the phone's): named by its device.
  await expect(card(page, first).getByTestId('card-outcome')).toContainText('Approved by you, on Chrome on ');

  // The Inbox is not "Loading…": its cards are there, and Deny takes a reason.
  await expect(pendingCards(page)).toHaveCount(1);
  const second = (await pendingCards(page).getAttribute('data-approval-id'))!;
  await p.goto(`${server.url}/inbox`);
  // A second tab drawn now, answered after the first: it is told, and nothing is recorded.
  const late = await phone.newPage();
  await late.goto(`${server.url}/inbox`);
  await expect(p.getByTestId('inbox-loading')).toHaveCount(0);
  const item = p.locator(`[data-testid=inbox-item][data-approval-id="${second}"]`);
  await expect(item).toBeVisible();
  await item.getByTestId('form-deny').locator('summary').click();
  await item.getByTestId('form-deny').locator('textarea').fill('not without a review');
  await item.locator('[data-action=form-submit-deny]').click();
  await expect(p).toHaveURL(/\/inbox$/);
  await expect(p.getByTestId('inbox-empty')).toBeVisible();
  await expect(toolResults(page, 'denied')).toHaveCount(1);
  await expect(card(page, second).getByTestId('card-outcome')).toContainText('not without a review');

  await expect(card(late, second)).toHaveAttribute('data-state', 'pending');
  await card(late, second).locator('[data-action=approve]').click();
  await expect(late.getByTestId('form-error')).toHaveAttribute('data-code', 'already_resolved');
  await late.getByTestId('form-back').click();
  await expect(late).toHaveURL(/\/inbox$/);
  await expect(toolResults(page, 'ok')).toHaveCount(1);
  await phone.close();
});

test('with the script, the same card is answered in place and its form never submits', async ({ page, server }) => {
  await login(page, server);
  await send(page, 'run: echo in-place');
  const pending = pendingCards(page);
  await expect(pending.getByTestId('form-deny')).toBeHidden();
  await expect(pending.locator('[data-action=edit]')).toBeVisible();
  const url = page.url();
  await pending.locator('[data-action=approve]').click();
  await expect(toolResults(page, 'ok')).toHaveCount(1);
  expect(page.url()).toBe(url);
});
