// A countersignature survives a crash: the server is killed (SIGKILL) while a gate waits,
// restarted on the same address, and the open page reconnects, still shows the card, and the
// click runs the tool exactly once.
import { test, expect } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startServer, RunningServer } from './server';
import { login, newSession, pendingCards, send, waitLive } from './helpers';

let server: RunningServer;
test.beforeAll(async () => { server = await startServer(); });
test.afterAll(async () => { await server.stop(); });

test('the card is still there after a crash and restart, and the click works', async ({ page }) => {
  await login(page, server);
  await newSession(page);
  await send(page, 'run: echo ran >> once.txt');
  await expect(pendingCards(page)).toHaveCount(1);
  const id = await pendingCards(page).getAttribute('data-approval-id');

  await server.crash();
  await expect(page.getByTestId('connection')).toHaveAttribute('data-state', 'reconnecting');
  await server.restart();
  await waitLive(page);

  // Also after a reload: the server rendered the card from the log.
  await page.reload();
  await waitLive(page);
  const card = page.locator(`[data-testid=approval-card][data-approval-id="${id}"]`);
  await expect(card).toHaveAttribute('data-state', 'pending');
  await card.locator('[data-action=approve]').click();
  await expect(card).toHaveAttribute('data-state', 'resolved');
  await expect(page.locator('[data-testid=tool-result][data-status=ok]')).toHaveCount(1);
  await expect(page.getByTestId('assistant-message').last()).toBeVisible();
  expect(readFileSync(join(server.workspace, 'once.txt'), 'utf8')).toBe('ran\n');
});
