// The real OpenID provider for the browser tests of issue 41 (npm `oidc-provider`,
// end2end/oidc/provider.mjs, installed by `ensure_oidc_provider` in scripts/lib.sh), a server
// configured for it, and the sign-in through the provider's own login form. The provider knows
// the server as PUBLIC_URL (its public_url); the browser's way back there is carried to the
// real server's address.
import { ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { resolve } from 'node:path';
import { Browser, expect, Page } from '@playwright/test';
import { RunningServer, startServer } from './server';

export const PUBLIC_URL = 'http://127.0.0.1:9';
const SECRET_ENV = 'COUNTERSIGN_TEST_OIDC_SECRET';
const SECRET = 'a-client-secret-for-the-tests-only';
const PROVIDER_DIR = process.env.COUNTERSIGN_OIDC_PROVIDER_DIR || resolve(__dirname, '../../target/oidc-provider');

/** The provider and the server that trusts it. */
export interface Team {
  idp: ChildProcess;
  server: RunningServer;
}

/**
 * The provider on a free loopback port and a server configured for it, `extraConfig` appended
 * to its config file; `undefined`, said loudly, when the provider is not installed and the run
 * does not require it (`CI=true` or `COUNTERSIGN_OIDC_PROVIDER=required`: then it throws).
 */
export async function startTeam(spec: string, extraConfig = ''): Promise<Team | undefined> {
  if (!existsSync(resolve(PROVIDER_DIR, 'node_modules/oidc-provider/package.json'))) {
    const why = `oidc-provider is not installed under ${PROVIDER_DIR} (source scripts/lib.sh; ensure_oidc_provider)`;
    if (process.env.CI === 'true' || process.env.COUNTERSIGN_OIDC_PROVIDER === 'required') throw new Error(why);
    console.warn(`\n*** SKIPPED ${spec}: ${why} ***\n`);
    return undefined;
  }
  const idp = spawn('node', [resolve(__dirname, '../oidc/provider.mjs'), '--client-id', 'countersign-e2e',
    '--client-secret', SECRET, '--redirect-uri', `${PUBLIC_URL}/auth/oidc/callback`],
  { env: { ...process.env, COUNTERSIGN_OIDC_PROVIDER_DIR: PROVIDER_DIR }, stdio: ['ignore', 'pipe', 'ignore'] });
  const line: string = await new Promise((ok) => createInterface({ input: idp.stdout! }).once('line', ok));
  const issuer = JSON.parse(line).issuer;
  process.env[SECRET_ENV] = SECRET;
  const server = await startServer([], {
    config: `[server]\npublic_url = "${PUBLIC_URL}"\n[auth.oidc]\nissuer = "${issuer}"\nclient_id = "countersign-e2e"\nclient_secret_env = "${SECRET_ENV}"\nname = "Test IdP"\n${extraConfig}`,
  });
  return { idp, server };
}

export async function stopTeam(team: Team | undefined) {
  await team?.server.stop();
  team?.idp.kill();
}

/** From the login page through the provider's form, as `account`. */
export async function signIn(page: Page, server: RunningServer, account: string) {
  // The provider sends the browser back to the public URL: carried to the real server.
  await page.route(`${PUBLIC_URL}/**`, (route) => {
    const back = new URL(route.request().url());
    return route.fulfill({ status: 302, headers: { location: `${server.url}${back.pathname}${back.search}` } });
  });
  await page.goto(`${server.url}/login`);
  await page.getByRole('link', { name: 'Sign in with Test IdP' }).click();
  await page.locator('input[name=login]').fill(account);
  await page.locator('input[name=password]').fill('any');
  await page.getByRole('button', { name: 'Sign-in' }).click();
}

/** A new browser (its own cookies) signed in as `account`, landed on its Inbox. */
export async function signedIn(browser: Browser, server: RunningServer, account: string): Promise<Page> {
  const context = await browser.newContext();
  const page = await context.newPage();
  await signIn(page, server, account);
  await expect(page).toHaveURL(/\/inbox$/);
  return page;
}

/** Invites `email` as an approver in `groups` (with the admin token). */
export async function invite(server: RunningServer, email: string, groups: string[]) {
  const invited = await fetch(`${server.url}/api/v1/people`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ email, roles: ['approver'], groups }),
  });
  expect(invited.status).toBe(201);
}
