// Grants that run out (issue 40): Always allow with a lifetime of "10 uses" shows on Rules
// with its uses left, counting down as calls it covers run; a one-use grant lapses "used up"
// after its call, stays listed greyed with why, and the next call asks again.
import { expect, Page } from '@playwright/test';
import { login, newSession, pendingCards, send, sessionId, test, toolResults, waitHydrated, waitLive } from './helpers';

async function rulesPage(page: Page, url: string) {
  await page.goto(`${url}/rules`);
  await waitHydrated(page);
}

test('a "10 uses" grant counts down on Rules as the calls it covers run', async ({ page, server }) => {
  await login(page, server);
  await newSession(page);
  const sessionPath = new URL(page.url()).pathname;
  await send(page, 'run: echo counted one');
  const card = pendingCards(page);
  await card.locator('[data-action=allow_always]').click();
  const lifetime = card.getByTestId('rule-lifetime');
  // The card's old default stands: a rule for this session, no end.
  await expect(lifetime).toHaveValue('session');
  await expect(lifetime.locator('option')).toHaveText(['This session', '1 hour', '8 hours', '10 uses', 'Always']);
  await lifetime.selectOption('10_uses');
  await expect(card.getByTestId('rule-scope')).toHaveValue('session');
  await card.locator('[data-action=submit-always]').click();
  await expect(page.locator('[data-testid=approval-card]')).toHaveAttribute('data-decision', 'allow_always');
  await expect(toolResults(page, 'ok')).toHaveCount(1);

  await rulesPage(page, server.url);
  const row = page.getByTestId('rule-row');
  await expect(row).toHaveCount(1);
  // The approval that made the grant is not one of its uses.
  await expect(row.getByTestId('rule-uses')).toHaveText('0 · 10 left');
  await expect(row.getByTestId('rule-source')).toHaveText('built-in agent');
  await expect(row).not.toHaveAttribute('data-lapsed');

  await page.goto(server.url + sessionPath);
  await waitLive(page);
  await send(page, 'run: echo counted two');
  await expect(toolResults(page, 'ok')).toHaveCount(2);
  await expect(pendingCards(page)).toHaveCount(0);

  await rulesPage(page, server.url);
  await expect(row.getByTestId('rule-uses')).toHaveText('1 · 9 left');
  // Last used: "just now · 14:02" (ui/when.rs).
  await expect(row).toContainText(/(just now|min ago) · \d\d:\d\d/);
});

test('a one-use grant lapses "used up" after its call, and the next call asks', async ({ page, server }) => {
  await login(page, server);
  await newSession(page);
  const sessionPath = new URL(page.url()).pathname;
  await send(page, 'run: echo once a');
  await expect(pendingCards(page)).toHaveCount(1);
  const id = await pendingCards(page).getAttribute('data-approval-id');
  // One use is the API's to give (the card offers ten).
  const answer = await page.request.post(`${server.url}/api/v1/sessions/${sessionId(page)}/approvals/${id}`, {
    headers: { Authorization: `Bearer ${server.token}` },
    data: { decision: 'allow_always', rule: { pattern: 'echo *', max_uses: 1 } },
  });
  expect(answer.status()).toBe(200);
  await expect(toolResults(page, 'ok')).toHaveCount(1);

  await send(page, 'run: echo once b');
  await expect(toolResults(page, 'ok')).toHaveCount(2);
  await expect(pendingCards(page)).toHaveCount(0);

  await rulesPage(page, server.url);
  const row = page.getByTestId('rule-row');
  await expect(row).toHaveAttribute('data-lapsed', 'used_up');
  await expect(row.getByTestId('rule-lapse')).toHaveText('used up: 1 of 1 uses');
  await expect(row.getByTestId('rule-uses')).toHaveText('1 · 0 left');

  await page.goto(server.url + sessionPath);
  await waitLive(page);
  await send(page, 'run: echo once c');
  await expect(pendingCards(page)).toHaveCount(1);

  // A lapsed grant is revoked like any other: it leaves the list.
  await rulesPage(page, server.url);
  await page.getByTestId('rule-row').getByTestId('revoke-rule').click();
  await expect(page.getByTestId('rules-empty')).toBeVisible();
});
