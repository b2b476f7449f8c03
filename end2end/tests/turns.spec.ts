// How a turn ends and how its tool rows say so: Stop cancels a running command (and a waiting
// card); a failing command and a denied call are shown expanded with their status, a
// successful one stays one line; the budget card suspends a turn that reached its ceiling,
// Continue goes on and Stop ends it.
import { expect } from '@playwright/test';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { card, chooseMode, login, pendingCards, send, test, toolResults } from './helpers';


test('Stop cancels a running command: the tool result says cancelled and the turn ends cancelled', async ({ page, server }) => {
  await login(page, server);
  await chooseMode(page, 'yolo');
  await send(page, 'run: sleep 30');
  const running = toolResults(page, 'running');
  await expect(running).toHaveCount(1);
  await expect(running).toContainText('shell: sleep 30');
  const stop = page.getByTestId('stop');
  await expect(stop).toBeVisible();
  await expect(page.getByTestId('send')).toBeDisabled();

  await stop.click();
  // Well before the 30 seconds are up (the expect timeout is 15 s): it was cancelled, not
  // waited out.
  const cancelled = toolResults(page, 'cancelled');
  await expect(cancelled).toHaveCount(1);
  await expect(cancelled).toContainText('shell: sleep 30');
  await expect(toolResults(page, 'running')).toHaveCount(0);
  await expect(toolResults(page, 'ok')).toHaveCount(0);
  const end = page.getByTestId('turn-end');
  await expect(end).toHaveAttribute('data-status', 'cancelled');
  await expect(end).toHaveText('Turn cancelled.');
  // The composer is free again.
  await expect(stop).toHaveCount(0);
  await expect(page.getByTestId('send')).toBeEnabled();
});

test('Stop while a card waits resolves the card cancelled and nothing runs', async ({ page, server }) => {
  await login(page, server);
  await send(page, 'run: touch stopped.txt');
  await expect(pendingCards(page)).toHaveCount(1);
  const id = (await pendingCards(page).getAttribute('data-approval-id'))!;
  await page.getByTestId('stop').click();
  const resolved = card(page, id);
  await expect(resolved).toHaveAttribute('data-state', 'resolved');
  await expect(resolved).toHaveAttribute('data-decision', 'cancelled');
  await expect(resolved.getByTestId('card-outcome')).toHaveText('Cancelled — not run');
  await expect(page.getByTestId('turn-end')).toHaveAttribute('data-status', 'cancelled');
  await expect(toolResults(page, 'ok')).toHaveCount(0);
  expect(existsSync(join(server.workspace, 'stopped.txt'))).toBe(false);
});

test('a failing command is shown expanded with its exit code; a successful one stays collapsed', async ({ page, server }) => {
  await login(page, server);
  await chooseMode(page, 'yolo');
  await send(page, 'run: echo fine\nrun: exit 3');
  const failed = toolResults(page, 'error');
  await expect(failed).toHaveCount(1);
  await expect(failed).toContainText('shell: exit 3');
  await expect(failed).toHaveJSProperty('open', true);
  const output = failed.locator('.tool-output');
  await expect(output).toBeVisible();
  await expect(output).toContainText('exit code 3');
  const ok = toolResults(page, 'ok');
  await expect(ok).toHaveCount(1);
  await expect(ok).toContainText('shell: echo fine');
  await expect(ok).toHaveJSProperty('open', false);
  await expect(ok.locator('.tool-output')).toBeHidden();
  // The agent's summary reports the failure with its status.
  await expect(page.getByTestId('assistant-message').last()).toContainText('[error]');
});

test('a denied call says denied on its row; the reason is on the card, said once', async ({ page, server }) => {
  await login(page, server);
  await send(page, 'run: touch denied.txt');
  const pending = pendingCards(page);
  await expect(pending).toHaveCount(1);
  await pending.locator('[data-action=deny]').click();
  await page.getByTestId('deny-reason').fill('not this file');
  await page.locator('[data-action=submit-deny]').click();
  const denied = toolResults(page, 'denied');
  await expect(denied).toHaveCount(1);
  await expect(denied).toContainText('shell: touch denied.txt');
  await expect(denied).toHaveJSProperty('open', false);
  await expect(denied.locator('.tool-outcome')).toHaveText(' → denied, not run');
  await expect(page.locator('[data-testid=approval-card][data-decision=deny]').getByTestId('card-outcome')).toContainText('not this file');
  // Still there for whoever opens the row: what the agent was told.
  await expect(denied.locator('.tool-output')).toContainText('not this file');
  await expect(toolResults(page, 'ok')).toHaveCount(0);
  expect(existsSync(join(server.workspace, 'denied.txt'))).toBe(false);
});

test.describe('with a budget of two tool calls per turn', () => {
  test.use({ serverConfig: '[budget]\nmax_tool_calls = 2\n' });

  test('the budget card suspends the turn; Continue goes on, Stop ends it stopped', async ({ page, server }) => {
    await login(page, server);
    await send(page, 'loop 4');
    const budget = pendingCards(page);
    await expect(budget).toHaveCount(1);
    await expect(budget).toHaveAttribute('data-kind', 'budget');
    await expect(budget.getByTestId('card-summary')).toContainText('2 of 2 tool calls used');
    // Two calls ran, the other two wait for the answer.
    await expect(toolResults(page, 'ok')).toHaveCount(2);
    const first = (await budget.getAttribute('data-approval-id'))!;
    // A budget card cannot be edited or always allowed; its answers are Continue and Stop.
    await expect(budget.locator('[data-action=edit]')).toHaveCount(0);
    await expect(budget.locator('[data-action=allow_always]')).toHaveCount(0);
    await expect(budget.locator('[data-action=approve]')).toContainText('Continue');
    await expect(budget.locator('[data-action=deny]')).toContainText('Stop');

    await budget.locator('[data-action=approve]').click();
    await expect(card(page, first)).toHaveAttribute('data-state', 'resolved');
    await expect(card(page, first).getByTestId('card-outcome')).toContainText('Continued by you');
    // The fresh allowance runs the other two calls.
    await expect(toolResults(page, 'ok')).toHaveCount(4);

    // That allowance is used up too: the next card appears; Stop ends the turn.
    const second = pendingCards(page);
    await expect(second).toHaveCount(1);
    await expect(second).toHaveAttribute('data-kind', 'budget');
    expect(await second.getAttribute('data-approval-id')).not.toBe(first);
    await second.locator('[data-action=deny]').click();
    await expect(page.getByTestId('turn-end')).toHaveAttribute('data-status', 'stopped');
    await expect(page.getByTestId('turn-end')).toHaveText('Turn stopped.');
    await expect(pendingCards(page)).toHaveCount(0);
    await expect(toolResults(page, 'ok')).toHaveCount(4);
  });
});
