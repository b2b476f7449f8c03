// Sign-in with OpenID Connect in Chromium (issue 41): a real provider (npm `oidc-provider`,
// end2end/oidc/provider.mjs), the login page's "Sign in with" link, the provider's own login
// form, and back: an invited person lands signed in (their email in the sidebar), someone not
// invited is told so. The provider knows the server as http://127.0.0.1:9 (its public_url);
// the browser's way back there is carried to the real server's address.
import { expect, test } from '@playwright/test';
import { RunningServer } from './server';
import { signIn, startTeam, stopTeam, Team } from './idp';


let team: Team | undefined;
let server: RunningServer | undefined;

test.beforeAll(async () => {
  team = await startTeam('oidc.spec.ts');
  server = team?.server;
  if (!server) return;
  const invited = await fetch(`${server.url}/api/v1/people`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'alice@example.test', roles: ['approver'] }),
  });
  expect(invited.status).toBe(201);
});

test.afterAll(async () => {
  await stopTeam(team);
});

test('an invited person signs in with the provider and lands signed in; someone not invited is told so', async ({ page, browser }) => {
  test.skip(!server, 'oidc-provider is not installed');
  await signIn(page, server!, 'alice');
  // The session cookie is SameSite=Strict: the page after the provider's redirect sends the
  // browser home itself, so the cookie goes with it.
  await expect(page).toHaveURL(/\/inbox$/);
  await expect(page.getByTestId('signed-in-email')).toHaveText('alice@example.test');

  const other = await browser.newPage();
  await signIn(other, server!, 'carol');
  await expect(other.getByTestId('sign-in-refused')).toContainText('carol@other.test was not invited');
  await other.goto(`${server!.url}/inbox`);
  await expect(other).toHaveURL(/\/login$/);
  await other.close();
});
