// Errors that heal: an answer that could not be sent says so until the connection is back,
// then the card is answerable again; a tab that loses the race (its feed dead, so it never
// hears of the winning answer) shows that answer and drops its buttons.
import { expect } from '@playwright/test';
import { card, login, pendingCards, send, test, toolResults, waitLive } from './helpers';

test('a failed answer says why, and the message clears when the connection is back', async ({ page, server }) => {
  await login(page, server);
  await send(page, 'run: echo after-the-outage');
  const pending = pendingCards(page);
  await expect(pending).toHaveCount(1);
  // The server goes away (its card is in the log): the answer cannot be sent, and says so.
  await server.crash();
  await expect(page.getByTestId('connection')).not.toHaveAttribute('data-state', 'live');
  await pending.locator('[data-action=approve]').click();
  await expect(pending.getByTestId('card-notice')).toBeVisible();
  // In words, and saying nothing was sent: no developer text.
  await expect(pending.getByTestId('card-notice')).toContainText("Can't reach Countersign, so nothing was sent");
  await expect(page.locator('body')).not.toContainText(/TypeError|server function|Failed to fetch/);
  await server.restart();
  await waitLive(page);
  await expect(pending.getByTestId('card-notice')).toHaveCount(0);
  // Still pending, still answerable.
  await pending.locator('[data-action=approve]').click();
  await expect(toolResults(page, 'ok')).toHaveCount(1);
});

test('a tab whose feed died and that loses the race shows the answer and no buttons', async ({ page, context, server }) => {
  await login(page, server);
  await send(page, 'run: echo race');
  await expect(pendingCards(page)).toHaveCount(1);
  const id = (await pendingCards(page).getAttribute('data-approval-id'))!;
  const stale = await context.newPage();
  await stale.route('**/events?**', (route) => route.abort());
  await stale.goto(page.url());
  await expect(stale.getByTestId('connection')).toHaveAttribute('data-state', 'reconnecting', { timeout: 30_000 });
  await expect(card(stale, id)).toHaveAttribute('data-state', 'pending');

  await card(page, id).locator('[data-action=approve]').click();
  await expect(toolResults(page, 'ok')).toHaveCount(1);

  const late = card(stale, id);
  await late.locator('[data-action=deny]').click();
  await late.locator('[data-action=submit-deny]').click();
  await expect(late).toHaveAttribute('data-state', 'resolved');
  await expect(late).toHaveAttribute('data-decision', 'approve');
  await expect(late.getByTestId('card-notice')).toHaveText('Already approved in another tab');
  await expect(late.getByTestId('card-outcome')).toContainText('Approved by you, in another tab');
  await expect(late.locator('button:visible')).toHaveCount(0);
  // No longer waiting here: no key reaches it, and the tab stops counting it.
  await late.focus();
  await stale.keyboard.press('a');
  await expect(late.getByTestId('card-confirm')).toHaveCount(0);
  await expect(stale).toHaveTitle(/^Countersign$/);
  await expect(toolResults(page, 'ok')).toHaveCount(1);
});
