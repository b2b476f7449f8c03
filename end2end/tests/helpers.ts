// Small helpers shared by the end-to-end tests.
import { expect, Page } from '@playwright/test';
import { RunningServer } from './server';

export async function login(page: Page, server: RunningServer) {
  await page.goto(`${server.url}/login?token=${server.token}`);
  await expect(page).toHaveURL(/\/sessions\/[0-9a-f-]{36}$/);
  await waitLive(page);
}

/** Hydrated and subscribed: the feed reports live. */
export async function waitLive(page: Page) {
  await expect(page.getByTestId('connection')).toHaveAttribute('data-state', 'live');
}

export async function send(page: Page, text: string) {
  await page.getByTestId('composer').fill(text);
  await page.getByTestId('send').click();
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
