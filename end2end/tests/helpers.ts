// Small helpers shared by the end-to-end tests.
import { test as base, expect, Page } from '@playwright/test';
import { RunningServer, startServer } from './server';

/**
 * `test` with a fresh server per test (its own data, workspace and pending gates), so a test
 * sees nothing another test left behind and may run in any order. `serverConfig` (TOML, set
 * with `test.use`) is passed as the server's config file.
 */
export const test = base.extend<{ serverConfig: string | undefined; server: RunningServer }>({
  serverConfig: [undefined, { option: true }],
  server: async ({ serverConfig }, use) => {
    const server = await startServer([], { config: serverConfig });
    await use(server);
    await server.stop();
  },
});

export async function login(page: Page, server: RunningServer) {
  await page.goto(`${server.url}/login?token=${server.token}`);
  await expect(page).toHaveURL(/\/sessions\/[0-9a-f-]{36}$/);
  await waitLive(page);
}

/**
 * Hydrated and subscribed: the feed reports live. Loading and compiling the debug bundle can
 * take a while on a busy two-core machine, so this waits longer than other expectations.
 */
export async function waitLive(page: Page) {
  await expect(page.getByTestId('connection')).toHaveAttribute('data-state', 'live', { timeout: 30_000 });
}

export async function send(page: Page, text: string) {
  await page.getByTestId('composer').fill(text);
  await page.getByTestId('send').click();
}

/**
 * Chooses an approval mode in the session's picker; Yolo asks for a second, deliberate click,
 * which this gives. Waits until the session header shows the mode.
 */
export async function chooseMode(page: Page, mode: 'plan' | 'ask' | 'auto_edit' | 'yolo') {
  await page.getByTestId('mode-picker').selectOption(mode);
  if (mode === 'yolo') {
    await page.getByTestId('yolo-confirm').locator('[data-action=confirm-yolo]').click();
  }
  await expect(page.getByTestId('session-mode')).toHaveAttribute('data-mode', mode);
}

export async function newSession(page: Page) {
  const before = page.url();
  await page.getByTestId('new-session').click();
  await expect(page).not.toHaveURL(before);
  await waitLive(page);
}

export function pendingCards(page: Page) {
  return page.locator('[data-testid=approval-card][data-state=pending]');
}

/** The session id in the page's URL. */
export function sessionId(page: Page): string {
  return new URL(page.url()).pathname.split('/').pop()!;
}

/** Server-rendered and then hydrated (pages other than a session): handlers are attached. */
export async function waitHydrated(page: Page) {
  await expect(page.locator('main.page')).toHaveAttribute('data-hydrated', 'true');
}

export function card(page: Page, approvalId: string) {
  return page.locator(`[data-testid=approval-card][data-approval-id="${approvalId}"]`);
}

export function toolResults(page: Page, status?: string) {
  return page.locator(status ? `[data-testid=tool-result][data-status=${status}]` : '[data-testid=tool-result]');
}

/**
 * A card that took focus on its own takes no key for a moment (letters typed as it arrived
 * were meant for something else): waits until no pending card is still settling.
 */
export async function keysReady(page: Page) {
  await expect(page.locator('[data-testid=approval-card][data-state=pending][data-keys=settling]')).toHaveCount(0);
}

/** Presses a key once the cards take keys. */
export async function pressKey(page: Page, key: string) {
  await keysReady(page);
  await page.keyboard.press(key);
}
