// The Config page: every key with its value and source, protected keys locked with the reason,
// the others edited in place (applied on the server and written to the file), a bad value
// refused inline, and a banner when the file on disk is invalid.
import { test, expect, Page } from '@playwright/test';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startServer, RunningServer } from './server';
import { login } from './helpers';

let server: RunningServer;
test.beforeAll(async () => { server = await startServer(); });
test.afterAll(async () => { await server.stop(); });

/** Server-rendered and then hydrated: event handlers are attached. */
async function waitHydrated(page: Page) {
  await expect(page.locator('main.page')).toHaveAttribute('data-hydrated', 'true');
}

function row(page: Page, key: string) {
  return page.locator(`[data-testid=config-row][data-key="${key}"]`);
}

function auth() {
  return { Authorization: `Bearer ${server.token}` };
}

async function apiConfig(request: import('@playwright/test').APIRequestContext) {
  const res = await request.get(`${server.url}/api/v1/config`, { headers: auth() });
  expect(res.status()).toBe(200);
  return res.json();
}

function apiValue(view: any, key: string) {
  return view.keys.find((k: any) => k.key === key);
}

test('config: locked keys, an inline edit applied on the server, a bad value, an invalid file', async ({ page, request }) => {
  await login(page, server);
  await page.getByTestId('nav-config').click();
  await expect(page).toHaveURL(/\/config$/);
  await waitHydrated(page);
  await expect(page).toHaveTitle('Config — Countersign');
  await expect(page.getByTestId('nav-config')).toHaveAttribute('aria-current', 'page');
  await expect(page.getByTestId('config-path')).toHaveText(join(server.dataDir, 'config.toml'));
  await expect(page.getByTestId('config-error')).toHaveCount(0);
  await expect(page.getByTestId('config-api-key')).toHaveText(/^Provider API key: (set \(masked\)|not set)$/);

  // Grouped by section, in the README's order.
  await expect(page.locator('tbody[data-section]')).toHaveCount(9);
  const sections = await page.locator('tbody[data-section]').evaluateAll(
    (els) => els.map((e) => e.getAttribute('data-section')));
  // The startup settings (flags, environment, defaults) come last, read-only.
  // `server.public_url` (a file key) sits with them.
  expect(sections).toEqual(['provider', 'approvals', 'safety', 'budget', 'storage', 'tools', 'notify', 'review', 'server']);
  await expect(page.locator('[data-testid=config-row][data-key="server.addr"] [data-testid=config-edit]')).toHaveCount(0);
  await expect(page.locator('[data-testid=config-row][data-key="server.token"]')).toContainText('(masked)');
  await expect(page.locator('body')).not.toContainText(server.token);

  // Protected keys: no edit control, a lock and the reason.
  const timeout = row(page, 'approvals.timeout_secs');
  await expect(timeout.getByTestId('config-value')).toHaveText('1800');
  await expect(timeout.getByTestId('config-source')).toHaveText('default');
  await expect(timeout.getByTestId('config-edit')).toHaveCount(0);
  await expect(timeout.getByTestId('config-locked')).toBeVisible();
  await expect(timeout.getByTestId('config-reason')).toHaveText('approval settings decide what needs your countersignature');
  const paths = row(page, 'safety.paths');
  await expect(paths.getByTestId('config-edit')).toHaveCount(0);
  await expect(paths.getByTestId('config-reason')).toHaveText('the safety floor can only be changed in the config file');
  // A list item by item, never TOML-quoted (issue 39.9).
  await expect(paths.getByTestId('config-value')).toContainText('**/.env*');
  await expect(paths.getByTestId('config-value')).not.toContainText('"');
  await expect(row(page, 'provider.base_url').getByTestId('config-edit')).toHaveCount(0);
  const db = row(page, 'storage.database_url');
  await expect(db.getByTestId('config-restart')).toBeVisible();
  await expect(db.getByTestId('config-edit')).toHaveCount(0);
  // ...and the others have one.
  await expect(row(page, 'provider.model').getByTestId('config-edit')).toHaveCount(1);

  // Esc cancels an edit.
  const shell = row(page, 'tools.shell_timeout_secs');
  await expect(shell.getByTestId('config-value')).toHaveText('120');
  await expect(shell.getByTestId('config-source')).toHaveText('default');
  await shell.getByTestId('config-edit').click();
  await expect(shell.getByTestId('config-input')).toBeFocused();
  await expect(shell.getByTestId('config-input')).toHaveValue('120');
  await shell.getByTestId('config-input').press('Escape');
  await expect(shell.getByTestId('config-input')).toHaveCount(0);
  await expect(shell.getByTestId('config-value')).toHaveText('120');

  // Save 45: the row shows it from the file, the server applies it, the file holds it.
  await shell.getByTestId('config-edit').click();
  await shell.getByTestId('config-input').fill('45');
  await shell.getByTestId('config-save').click();
  await expect(shell.getByTestId('config-input')).toHaveCount(0);
  await expect(shell.getByTestId('config-value')).toHaveText('45');
  await expect(shell.getByTestId('config-source')).toHaveText('file');
  await expect(shell.getByTestId('config-default')).toHaveText('default: 120');
  let view = await apiConfig(request);
  expect(apiValue(view, 'tools.shell_timeout_secs')).toMatchObject({ value: 45, source: 'file', default: 120 });
  const file = join(server.dataDir, 'config.toml');
  expect(readFileSync(file, 'utf8')).toMatch(/^shell_timeout_secs = 45$/m);
  // Audited as the browser's change (the credential), through the UI.
  const audit = await request.get(`${server.url}/api/v1/audit?action=config_changed`, { headers: auth() });
  const entries: any[] = await audit.json();
  const entry = entries.find((e: any) => e.subject === 'tools.shell_timeout_secs');
  expect(entry.actor).toBe('browser');
  expect(entry.detail).toMatchObject({ value: '45', via: 'ui' });

  // A bad value (a number input: no words to type, issue 39.9): said in words next to the
  // field, nothing changed.
  await shell.getByTestId('config-edit').click();
  await shell.getByTestId('config-input').fill('-5');
  await shell.getByTestId('config-input').press('Enter');
  await expect(shell.getByTestId('config-save-error')).toContainText('shell_timeout_secs');
  await expect(shell.getByTestId('config-input')).toHaveValue('-5');
  view = await apiConfig(request);
  expect(apiValue(view, 'tools.shell_timeout_secs')).toMatchObject({ value: 45, source: 'file' });
  expect(readFileSync(file, 'utf8')).toMatch(/^shell_timeout_secs = 45$/m);
  await shell.getByTestId('config-cancel').click();
  await expect(shell.getByTestId('config-save-error')).toHaveCount(0);
  await expect(shell.getByTestId('config-value')).toHaveText('45');

  // The server's message inline: a window smaller than the schema allows.
  const window = row(page, 'provider.context_tokens');
  await window.getByTestId('config-edit').click();
  await window.getByTestId('config-input').fill('100');
  await window.getByTestId('config-save').click();
  await expect(window.getByTestId('config-save-error')).toContainText('context_tokens');
  await window.getByTestId('config-cancel').click();

  // A string value: shown and edited as it is, without TOML quotes (issue 39.9).
  const model = row(page, 'provider.model');
  await model.getByTestId('config-edit').click();
  await expect(model.getByTestId('config-input')).toHaveValue('gpt-4o-mini');
  await model.getByTestId('config-input').fill('local-model');
  await model.getByTestId('config-save').click();
  await expect(model.getByTestId('config-value')).toHaveText('local-model');
  await expect(model.getByTestId('config-source')).toHaveText('file');
  view = await apiConfig(request);
  expect(apiValue(view, 'provider.model').value).toBe('local-model');

  // An invalid file written by hand: after a reload the page says so; the last good config
  // stays in force.
  writeFileSync(file, '[tools]\nshell_timeout_secs = "soon"\n');
  await expect.poll(async () => (await apiConfig(request)).error, { timeout: 15_000 }).toBeTruthy();
  await page.reload();
  await waitHydrated(page);
  const banner = page.getByTestId('config-error');
  await expect(banner).toBeVisible();
  await expect(banner).toContainText('The config file on disk is invalid; the last good config is in force:');
  await expect(banner).toContainText('shell_timeout_secs');
  await expect(row(page, 'tools.shell_timeout_secs').getByTestId('config-value')).toHaveText('45');
});
