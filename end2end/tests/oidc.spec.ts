// Sign-in with OpenID Connect in Chromium (issue 41): a real provider (npm `oidc-provider`,
// end2end/oidc/provider.mjs), the login page's "Sign in with" link, the provider's own login
// form, and back: an invited person lands signed in (their email in the sidebar), someone not
// invited is told so. The provider knows the server as http://127.0.0.1:9 (its public_url);
// the browser's way back there is carried to the real server's address.
import { ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { resolve } from 'node:path';
import { expect, Page, test } from '@playwright/test';
import { RunningServer, startServer } from './server';

const PUBLIC_URL = 'http://127.0.0.1:9';
const SECRET_ENV = 'COUNTERSIGN_TEST_OIDC_SECRET';
const SECRET = 'a-client-secret-for-the-tests-only';
const PROVIDER_DIR = process.env.COUNTERSIGN_OIDC_PROVIDER_DIR || resolve(__dirname, '../../target/oidc-provider');

let idp: ChildProcess | undefined;
let server: RunningServer | undefined;

test.beforeAll(async () => {
  if (!existsSync(resolve(PROVIDER_DIR, 'node_modules/oidc-provider/package.json'))) {
    const why = `oidc-provider is not installed under ${PROVIDER_DIR} (source scripts/lib.sh; ensure_oidc_provider)`;
    if (process.env.CI === 'true' || process.env.COUNTERSIGN_OIDC_PROVIDER === 'required') throw new Error(why);
    console.warn(`\n*** SKIPPED oidc.spec.ts: ${why} ***\n`);
    return;
  }
  idp = spawn('node', [resolve(__dirname, '../oidc/provider.mjs'), '--client-id', 'countersign-e2e',
    '--client-secret', SECRET, '--redirect-uri', `${PUBLIC_URL}/auth/oidc/callback`],
  { env: { ...process.env, COUNTERSIGN_OIDC_PROVIDER_DIR: PROVIDER_DIR }, stdio: ['ignore', 'pipe', 'ignore'] });
  const line: string = await new Promise((ok) => createInterface({ input: idp!.stdout! }).once('line', ok));
  const issuer = JSON.parse(line).issuer;
  process.env[SECRET_ENV] = SECRET;
  server = await startServer([], {
    config: `[server]\npublic_url = "${PUBLIC_URL}"\n[auth.oidc]\nissuer = "${issuer}"\nclient_id = "countersign-e2e"\nclient_secret_env = "${SECRET_ENV}"\nname = "Test IdP"\n`,
  });
  const invited = await fetch(`${server.url}/api/v1/people`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'alice@example.test', roles: ['approver'] }),
  });
  expect(invited.status).toBe(201);
});

test.afterAll(async () => {
  await server?.stop();
  idp?.kill();
});

/** From the login page through the provider's form, as `account`. */
async function signIn(page: Page, account: string) {
  // The provider sends the browser back to the public URL: carried to the real server.
  await page.route(`${PUBLIC_URL}/**`, (route) => {
    const back = new URL(route.request().url());
    return route.fulfill({ status: 302, headers: { location: `${server!.url}${back.pathname}${back.search}` } });
  });
  await page.goto(`${server!.url}/login`);
  await page.getByRole('link', { name: 'Sign in with Test IdP' }).click();
  await page.locator('input[name=login]').fill(account);
  await page.locator('input[name=password]').fill('any');
  await page.getByRole('button', { name: 'Sign-in' }).click();
}

test('an invited person signs in with the provider and lands signed in; someone not invited is told so', async ({ page, browser }) => {
  test.skip(!server, 'oidc-provider is not installed');
  await signIn(page, 'alice');
  // The session cookie is SameSite=Strict: the page after the provider's redirect sends the
  // browser home itself, so the cookie goes with it.
  await expect(page).toHaveURL(/\/inbox$/);
  await expect(page.getByTestId('signed-in-email')).toHaveText('alice@example.test');

  const other = await browser.newPage();
  await signIn(other, 'carol');
  await expect(other.getByTestId('sign-in-refused')).toContainText('carol@other.test was not invited');
  await other.goto(`${server!.url}/inbox`);
  await expect(other).toHaveURL(/\/login$/);
  await other.close();
});
