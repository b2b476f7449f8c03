// The foundation end to end: log in, chat with the demo agent, see the streamed answer and
// the tool result, the file lands in the workspace, a reload restores the same transcript,
// and a second tab follows live.
import { test, expect, Page } from '@playwright/test';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startServer, RunningServer } from './server';
import { chooseMode } from './helpers';

let server: RunningServer;
test.beforeAll(async () => { server = await startServer(); });
test.afterAll(async () => { await server.stop(); });

async function login(page: Page) {
  await page.goto(`${server.url}/login?token=${server.token}`);
  await expect(page).toHaveURL(/\/sessions\/[0-9a-f-]{36}$/);
  // Hydrated once the feed reports live.
  await expect(page.getByTestId('connection')).toHaveAttribute('data-state', 'live');
}

test('a page without the cookie redirects to the login page', async ({ page }) => {
  await page.goto(`${server.url}/`);
  await expect(page).toHaveURL(/\/login$/);
  await expect(page.locator('input[name=token]')).toBeVisible();
});

test('chat with the demo agent, reload, and follow from a second tab', async ({ page, context }) => {
  await login(page);
  const sessionUrl = page.url();

  // Record whether streamed text ever appeared before the final message.
  await page.evaluate(() => {
    (window as any).__sawStreaming = false;
    new MutationObserver(() => {
      if (document.querySelector('[data-testid=assistant-streaming]')) (window as any).__sawStreaming = true;
    }).observe(document.body, { childList: true, subtree: true, characterData: true });
  });

  await page.getByTestId('composer').fill('write notes.md: hello');
  await page.getByTestId('composer').press('Enter');
  // Ask mode (the default): the write waits for a countersignature.
  await page.locator('[data-testid=approval-card][data-state=pending] [data-action=approve]').click();

  const result = page.locator('[data-testid=tool-result][data-status=ok]');
  await expect(result).toHaveCount(1);
  await expect(result).toContainText('write_file notes.md');
  const answer = page.getByTestId('assistant-message');
  await expect(answer).toContainText('wrote 5 bytes to notes.md');
  expect(await page.evaluate(() => (window as any).__sawStreaming)).toBe(true);

  const file = join(server.workspace, 'notes.md');
  expect(existsSync(file)).toBe(true);
  expect(readFileSync(file, 'utf8')).toBe('hello');

  // A reload shows the same transcript, rendered by the server from the log.
  const before = await page.locator('#transcript').innerText();
  await page.reload();
  await expect(page.getByTestId('connection')).toHaveAttribute('data-state', 'live');
  await expect(page.locator('[data-testid=tool-result][data-status=ok]')).toHaveCount(1);
  expect(await page.locator('#transcript').innerText()).toBe(before);

  // A second tab on the same session sees new events live.
  const second = await context.newPage();
  await second.goto(sessionUrl);
  await expect(second.getByTestId('connection')).toHaveAttribute('data-state', 'live');
  await chooseMode(page, 'yolo');
  await page.getByTestId('composer').fill('run: echo from-the-first-tab');
  await page.getByTestId('send').click();
  await expect(second.locator('[data-testid=tool-result][data-status=ok]')).toHaveCount(2);
  await expect(second.locator('[data-testid=tool-result]').last()).toContainText('echo from-the-first-tab');
  await expect(second.getByTestId('assistant-message').last()).toContainText('from-the-first-tab');
});
