// A long session opens with its recent turns only; "Show earlier messages" pages the older
// turns in above them, until the first message is back.
import { test, expect, APIRequestContext } from '@playwright/test';
import { startServer, RunningServer } from './server';
import { login } from './helpers';

let server: RunningServer;
test.beforeAll(async () => { server = await startServer(); });
test.afterAll(async () => { await server.stop(); });

/** Sends a message over the API and waits until its turn has finished. */
async function turn(api: APIRequestContext, sid: string, text: string) {
  const headers = { Authorization: `Bearer ${server.token}` };
  const sent = await api.post(`${server.url}/api/v1/sessions/${sid}/messages`, {
    headers, data: { text, approval_mode: 'yolo' },
  });
  expect(sent.status()).toBe(202);
  const { turn_id } = await sent.json();
  await expect.poll(async () => {
    const snap = await (await api.get(`${server.url}/api/v1/sessions/${sid}`, { headers })).json();
    return snap.events.some((e: any) => e.type === 'turn_finished' && e.turn_id === turn_id);
  }, { timeout: 30_000 }).toBe(true);
}

test('a long session opens at its recent turns and pages earlier ones in', async ({ page }) => {
  await login(page, server);
  const sid = new URL(page.url()).pathname.split('/').pop()!;
  await turn(page.request, sid, 'write earliest.md: the very first message');
  for (let i = 0; i < 3; i++) await turn(page.request, sid, 'loop 40');

  await page.reload();
  await expect(page.getByTestId('connection')).toHaveAttribute('data-state', 'live');
  const first = page.getByTestId('user-message').filter({ hasText: 'write earliest.md' });
  await expect(first).toHaveCount(0);
  const older = page.getByTestId('load-older');
  await expect(older).toBeVisible();
  const shownBefore = await page.locator('[data-testid=tool-result]').count();

  for (let i = 0; i < 5 && (await older.count()) > 0; i++) {
    const shown = await page.getByTestId('user-message').count();
    await older.click();
    await expect.poll(() => page.getByTestId('user-message').count()).toBeGreaterThan(shown);
  }
  await expect(first).toHaveCount(1);
  await expect(older).toHaveCount(0);
  expect(await page.locator('[data-testid=tool-result]').count()).toBeGreaterThan(shownBefore);
  // The earliest message sits above the later ones.
  const texts = await page.getByTestId('user-message').allInnerTexts();
  expect(texts[0]).toContain('write earliest.md');
  expect(texts).toHaveLength(4);
});
