// Approval gates in the browser: the card appears, survives a reload, resolves live in a
// second tab, can be edited before approving, renders hostile markdown inert, and a click
// that loses a race says so instead of failing.
import { test, expect } from '@playwright/test';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startServer, RunningServer } from './server';
import { login, newSession, pendingCards, send, waitLive, pressKey } from './helpers';

let server: RunningServer;
test.beforeAll(async () => { server = await startServer(); });
test.afterAll(async () => { await server.stop(); });

test('a gate survives a reload and Approve then runs the tool', async ({ page }) => {
  await login(page, server);
  await newSession(page);
  await send(page, 'write reload.md: kept');
  const card = pendingCards(page);
  await expect(card).toHaveCount(1);
  await expect(card).toHaveAttribute('data-kind', 'tool');
  await expect(card.getByTestId('card-summary')).toHaveText('write_file reload.md (1 line, new file)');
  await expect(card.getByTestId('diff')).toContainText('+kept');
  await expect(page).toHaveTitle('(1) Countersign — approval needed');
  const id = await card.getAttribute('data-approval-id');
  expect(existsSync(join(server.workspace, 'reload.md'))).toBe(false);

  await page.reload();
  await waitLive(page);
  const restored = pendingCards(page);
  await expect(restored).toHaveCount(1);
  await expect(restored).toHaveAttribute('data-approval-id', id!);
  await restored.locator('[data-action=approve]').click();

  const resolved = page.locator(`[data-testid=approval-card][data-approval-id="${id}"]`);
  await expect(resolved).toHaveAttribute('data-state', 'resolved');
  await expect(resolved).toHaveAttribute('data-decision', 'approve');
  await expect(resolved.getByTestId('card-outcome')).toContainText('Approved by you');
  await expect(page.locator('[data-testid=tool-result][data-status=ok]')).toHaveCount(1);
  expect(readFileSync(join(server.workspace, 'reload.md'), 'utf8')).toBe('kept');
  await expect(page).toHaveTitle('Countersign');
});

test('approving in one page resolves the card in the other live', async ({ page, context }) => {
  await login(page, server);
  await newSession(page);
  const other = await context.newPage();
  await other.goto(page.url());
  await waitLive(other);
  await send(page, 'run: echo two-pages');
  await expect(pendingCards(page)).toHaveCount(1);
  await expect(pendingCards(other)).toHaveCount(1);
  await pendingCards(other).locator('[data-action=approve]').click();
  const card = page.locator('[data-testid=approval-card]');
  await expect(card).toHaveAttribute('data-state', 'resolved');
  await expect(card).toHaveAttribute('data-decision', 'approve');
  await expect(card.getByTestId('card-outcome')).toContainText('in another tab');
  await expect(page.locator('[data-testid=tool-result][data-status=ok]')).toContainText('echo two-pages');
});

test('edit the arguments, then approve the edited call', async ({ page }) => {
  await login(page, server);
  await newSession(page);
  await send(page, 'write edited.md: original');
  const card = pendingCards(page);
  await card.locator('[data-action=edit]').click();
  const field = card.getByTestId('edit-input');
  await expect(field).toHaveValue('original');
  await field.fill('changed by a person');
  await card.locator('[data-action=submit-edit]').click();
  const resolved = page.locator('[data-testid=approval-card]');
  await expect(resolved).toHaveAttribute('data-decision', 'edit');
  await expect(page.locator('[data-testid=tool-result][data-status=ok]')).toHaveCount(1);
  expect(readFileSync(join(server.workspace, 'edited.md'), 'utf8')).toBe('changed by a person');
});

test('deny with a reason from the keyboard; the agent answers to it', async ({ page }) => {
  await login(page, server);
  await newSession(page);
  await send(page, 'run: touch never.txt');
  await expect(pendingCards(page)).toHaveCount(1);
  await page.locator('body').click({ position: { x: 5, y: 5 } });
  await pressKey(page, 'd');
  await page.getByTestId('deny-reason').fill('use b.txt instead');
  await page.getByTestId('deny-reason').press('Enter');
  await expect(page.locator('[data-testid=approval-card]')).toHaveAttribute('data-decision', 'deny');
  await expect(page.getByTestId('assistant-message').last()).toContainText('use b.txt instead');
  expect(existsSync(join(server.workspace, 'never.txt'))).toBe(false);
});

test('a hostile proposal renders inert', async ({ page }) => {
  let dialogs = 0;
  page.on('dialog', async (d) => { dialogs += 1; await d.dismiss(); });
  await login(page, server);
  await newSession(page);
  await send(page, 'ask prep_plan: Drop null rows | Remove rows where **price** is empty <img src=x onerror=alert(1)> [x](javascript:alert(1))');
  const card = pendingCards(page);
  await expect(card).toHaveAttribute('data-kind', 'decision');
  const proposal = card.getByTestId('proposal');
  await expect(proposal.locator('strong')).toHaveText('price');
  await expect(proposal.locator('img')).toHaveCount(0);
  await expect(proposal.locator('a[href^="javascript"]')).toHaveCount(0);
  await expect(proposal).toContainText('<img src=x onerror=alert(1)>');
  await proposal.click();
  await page.reload();
  await waitLive(page);
  await page.waitForTimeout(300);
  expect(dialogs).toBe(0);
  // Decide it so the turn ends.
  await pendingCards(page).locator('[data-action=approve]').click();
  await expect(page.locator('[data-testid=approval-card]')).toHaveAttribute('data-state', 'resolved');
});

test('a click that loses the race says it was already approved elsewhere', async ({ page, context, request }) => {
  await login(page, server);
  await newSession(page);
  const sid = page.url().split('/').pop()!;
  await send(page, 'run: echo race');
  await expect(pendingCards(page)).toHaveCount(1);
  const aid = await pendingCards(page).getAttribute('data-approval-id');

  // A second tab whose live feed cannot connect: it shows the card from the server render
  // but will not hear that someone else answered.
  const racer = await context.newPage();
  await racer.route('**/events?**', (route) => route.abort());
  await racer.goto(page.url());
  await expect(racer.getByTestId('connection')).toHaveAttribute('data-state', 'reconnecting');
  await expect(pendingCards(racer)).toHaveCount(1);

  const answer = await request.post(`${server.url}/api/v1/sessions/${sid}/approvals/${aid}`, {
    headers: { Authorization: `Bearer ${server.token}` },
    data: { decision: 'approve' },
  });
  expect(answer.status()).toBe(200);

  await pendingCards(racer).locator('[data-action=approve]').click();
  await expect(racer.getByTestId('card-notice')).toHaveText(/already approved in another tab/i);
  // The first page heard the real answer.
  await expect(page.locator('[data-testid=approval-card]')).toHaveAttribute('data-state', 'resolved');
});

test('several pending cards get an Approve all bar, and keys act on the focused card', async ({ page }) => {
  await login(page, server);
  await newSession(page);
  await send(page, 'parallel:\nwrite all-a.txt: 1\nwrite all-b.txt: 2');
  await expect(pendingCards(page)).toHaveCount(2);
  await expect(page).toHaveTitle('(2) Countersign — approval needed');
  const bar = page.getByTestId('bulk-bar');
  await expect(bar).toContainText('2 pending');
  await bar.locator('[data-action=approve-all]').click();
  await expect(page.locator('[data-testid=approval-card][data-state=resolved][data-decision=approve]')).toHaveCount(2);
  await expect(bar).toHaveCount(0);
  // Resolved is not yet run: wait for both results before reading the files.
  await expect(page.locator('[data-testid=tool-result][data-status=ok]')).toHaveCount(2);
  expect(readFileSync(join(server.workspace, 'all-a.txt'), 'utf8')).toBe('1');
  expect(readFileSync(join(server.workspace, 'all-b.txt'), 'utf8')).toBe('2');

  // A new gate takes focus while the composer is empty; `a` approves it.
  await send(page, 'run: echo keyed');
  await expect(pendingCards(page)).toHaveCount(1);
  await expect(pendingCards(page)).toBeFocused();
  await pressKey(page, 'a');
  await expect(page.locator('[data-testid=tool-result][data-status=ok]').last()).toContainText('echo keyed');
});

test('a plan card leaves plan mode for the picked mode and the turn goes on', async ({ page }) => {
  await login(page, server);
  await newSession(page);
  await page.getByTestId('mode-picker').selectOption('plan');
  await expect(page.getByTestId('session-mode')).toHaveAttribute('data-mode', 'plan');
  await send(page, 'propose plan: 1. write the file\nwrite planned.txt: done');
  const card = pendingCards(page);
  await expect(card).toHaveAttribute('data-kind', 'decision');
  await expect(card.getByTestId('execution-mode')).toHaveValue('ask');
  await card.getByTestId('execution-mode').selectOption('auto_edit');
  await card.locator('[data-action=approve]').click();
  await expect(page.getByTestId('session-mode')).toHaveAttribute('data-mode', 'auto_edit');
  // In auto_edit the write runs without a card.
  await expect(page.locator('[data-testid=tool-result][data-status=ok]').last()).toContainText('write_file planned.txt');
  expect(readFileSync(join(server.workspace, 'planned.txt'), 'utf8')).toBe('done');
  await expect(pendingCards(page)).toHaveCount(0);
});
