// One app (issue 39.8-10): Security and Notify in the app's shell with its styled controls, in
// light and dark; Config as a form (select, number with its unit, switch, protected keys with
// their reasons, no TOML quotes); a new approve token's login link and QR code for a phone.
import { expect, Page } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test, login, waitHydrated } from './helpers';

/** The computed styles that make a control look like the app's. */
async function looks(page: Page, selector: string) {
  return page.locator(selector).first().evaluate((el) => {
    const s = getComputedStyle(el);
    return {
      background: s.backgroundColor, border: s.borderTopColor, radius: s.borderTopLeftRadius,
      font: s.fontFamily, size: s.fontSize, color: s.color,
    };
  });
}

for (const scheme of ['light', 'dark'] as const) {
  test(`Security and Notify have the sidebar and the app's controls (${scheme})`, async ({ page, server }) => {
    await page.emulateMedia({ colorScheme: scheme });
    await login(page, server);
    await page.goto(`${server.url}/tokens`);
    await waitHydrated(page);
    const primary = await looks(page, '[data-testid=create-token]');
    const field = await looks(page, '[data-testid=token-name]');

    await page.getByTestId('nav-security').click();
    await expect(page).toHaveURL(/\/security$/);
    await expect(page.locator('body')).toHaveAttribute('data-ready', 'true');
    await expect(page.locator('nav.sidebar')).toBeVisible();
    await expect(page.getByTestId('nav-security')).toHaveAttribute('aria-current', 'page');
    await expect(page.locator('.page-header h1')).toHaveText('Security');
    await expect(page.getByTestId('os-boundary')).toBeVisible();
    expect(await looks(page, '#passkey-add')).toEqual(primary);
    const name = await looks(page, '#passkey-name');
    expect({ ...name, radius: undefined }).toEqual({ ...field, radius: undefined });
    expect(name.radius).toBe(field.radius);

    await page.getByTestId('nav-notify').click();
    await expect(page).toHaveURL(/\/notify$/);
    await expect(page.locator('body')).toHaveAttribute('data-ready', 'true');
    await expect(page.locator('nav.sidebar')).toBeVisible();
    await expect(page.getByTestId('nav-notify')).toHaveAttribute('aria-current', 'page');
    await expect(page.getByTestId('push-status')).not.toHaveText('Checking…');
    expect(await looks(page, '#push-on')).toEqual(primary);
    // The page hydrates like every other.
    await waitHydrated(page);
  });
}

test('Config is a form: a select, a number with its unit, a switch, protected keys with their reasons, no quotes', async ({ page, server }) => {
  await login(page, server);
  await page.goto(`${server.url}/config`);
  await waitHydrated(page);
  const row = (key: string) => page.locator(`[data-testid=config-row][data-key="${key}"]`);

  // No value is TOML-quoted.
  for (const text of await page.getByTestId('config-value').allTextContents()) {
    expect(text).not.toMatch(/^".*"$|", "/);
  }
  // Protected keys: read-only, locked, with the reason.
  const passkey = row('approvals.require_passkey');
  await expect(passkey.getByTestId('config-edit')).toHaveCount(0);
  await expect(passkey.getByTestId('config-reason')).toHaveText('approval settings decide what needs your countersignature');
  await expect(passkey.getByTestId('config-value')).toHaveText('off');
  // A boolean is a switch (here locked, so disabled).
  const push = row('notify.push_test_endpoints');
  await expect(push.locator('input[role=switch]')).toBeDisabled();
  await expect(push.locator('input[role=switch]')).not.toBeChecked();
  await expect(push.getByTestId('config-value')).toHaveText('off');
  await expect(push.getByTestId('config-reason')).toContainText('can only be changed in the config file');

  // A number with its unit.
  const parallel = row('tools.max_parallel');
  await expect(parallel.getByTestId('config-value')).toHaveText('4');
  await expect(parallel.getByTestId('config-unit')).toHaveText('calls at once');
  await parallel.getByTestId('config-edit').click();
  await expect(parallel.getByTestId('config-input')).toHaveAttribute('type', 'number');
  await expect(parallel.getByTestId('config-input')).toHaveValue('4');
  await expect(parallel.locator('.config-unit')).toHaveText('calls at once');
  await parallel.getByTestId('config-input').fill('2');
  await parallel.getByTestId('config-save').click();
  await expect(parallel.getByTestId('config-value')).toHaveText('2');
  await expect(parallel.getByTestId('config-source')).toHaveText('file');
  const file = readFileSync(join(server.dataDir, 'config.toml'), 'utf8');
  expect(file).toMatch(/^max_parallel = 2$/m);

  // An enum is a select of the words the schema takes.
  const kind = row('provider.kind');
  await kind.getByTestId('config-edit').click();
  const select = kind.locator('select[data-testid=config-input]');
  await expect(select).toHaveValue('demo');
  expect(await select.locator('option').allTextContents()).toEqual(['demo', 'openai']);
  await select.selectOption('openai');
  await kind.getByTestId('config-save').click();
  await expect(kind.getByTestId('config-value')).toHaveText('openai');
  expect(readFileSync(join(server.dataDir, 'config.toml'), 'utf8')).toMatch(/^kind = "openai"$/m);
});

test('a new approve token shows a login link and its QR code; the link logs a phone in once, as that token', async ({ page, server, browser }) => {
  await login(page, server);
  await page.goto(`${server.url}/tokens`);
  await waitHydrated(page);

  // A gates token: no phone link.
  await page.getByTestId('token-name').fill('hook');
  await page.getByTestId('token-scope').selectOption('gates');
  await page.getByTestId('create-token').click();
  await expect(page.getByTestId('new-secret')).toBeVisible();
  await expect(page.getByTestId('phone-login')).toHaveCount(0);

  await page.getByTestId('token-name').fill('pixel');
  await page.getByTestId('token-scope').selectOption('approve');
  await page.getByTestId('create-token').click();
  const secret = await page.getByTestId('token-secret').inputValue();
  const linkField = page.getByTestId('phone-login-link');
  await expect(linkField).toHaveValue(/\/login\?code=csp_/);
  const link = await linkField.inputValue();
  expect(link.startsWith(server.url)).toBe(true);
  expect(link).not.toContain(secret);
  const qr = page.getByTestId('phone-qr');
  await expect(qr.locator('svg')).toHaveCount(1);
  await expect(qr).toHaveAttribute('data-link', link);
  // Shown once, like the secret.
  await page.getByTestId('secret-done').click();
  await expect(page.getByTestId('phone-login')).toHaveCount(0);

  const phone = await browser.newContext();
  try {
    const tab = await phone.newPage();
    await tab.goto(link);
    await expect(tab).toHaveURL(`${server.url}/inbox`);
    await expect(tab.locator('body')).toHaveAttribute('data-scope', 'approve');
    await expect(tab.getByTestId('nav-config')).toHaveCount(0);
  } finally {
    await phone.close();
  }
  // Good once.
  const again = await browser.newContext();
  try {
    const tab = await again.newPage();
    const res = await tab.goto(link);
    expect(res!.status()).toBe(401);
  } finally {
    await again.close();
  }
});
