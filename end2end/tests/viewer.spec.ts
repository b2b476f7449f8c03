// A viewer (issue 41) signs in through the real provider (npm `oidc-provider`,
// end2end/oidc/provider.mjs) and reads: the Inbox shows a waiting card without its Approve,
// Edit, Deny or Allow always buttons, the navigation shows no admin page and no "Notify this
// device", and an answer posted from the page anyway is refused (403) with the card still
// waiting; made an approver, the same login's next page draws the buttons. The provider knows the server as http://127.0.0.1:9 (its public_url); the
// browser's way back there is carried to the real server's address.
import { expect, test } from '@playwright/test';
import { RunningServer } from './server';
import { signIn, startTeam, stopTeam, Team } from './idp';


let team: Team | undefined;
let server: RunningServer | undefined;

async function api(path: string, body: unknown, token = server!.token): Promise<Response> {
  return fetch(`${server!.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

test.beforeAll(async () => {
  team = await startTeam('viewer.spec.ts');
  server = team?.server;
  if (!server) return;
  expect((await api('/api/v1/people', { email: 'bob@example.test', roles: ['viewer'] })).status).toBe(201);
});

test.afterAll(async () => {
  await stopTeam(team);
});

test('a viewer reads a waiting card without its buttons, and an answer posted anyway is refused', async ({ page }) => {
  test.skip(!server, 'oidc-provider is not installed');
  const hook = await (await api('/api/v1/tokens', { name: 'hook', scope: 'gates' })).json();
  const opened = await api('/api/v1/gates', {
    source: 'claude-code', external_session: 'viewer-e2e',
    tool: { name: 'Bash', input: { command: 'make deploy' } },
  }, hook.token);
  expect(opened.status).toBe(201);
  const gate = await opened.json();

  await signIn(page, server!, 'bob');
  await expect(page).toHaveURL(/\/inbox$/);
  await expect(page.getByTestId('signed-in-email')).toHaveText('bob@example.test');
  await expect(page.locator('body')).toHaveAttribute('data-scope', 'view');
  const card = page.getByTestId('approval-card');
  await expect(card).toHaveCount(1);
  // Open its row if the Inbox drew it closed: the card is there to read either way.
  const read = page.getByTestId('card-read-only');
  if (!(await read.isVisible())) await page.getByText('make deploy').first().click();
  await expect(read).toBeVisible();
  for (const name of [/^Approve/, /^Edit/, /^Deny/, /Allow always/]) {
    await expect(card.getByRole('button', { name, includeHidden: true })).toHaveCount(0);
  }
  await expect(page.getByTestId('inbox-pick')).toHaveCount(0);
  for (const nav of ['nav-config', 'nav-tokens', 'nav-answers', 'nav-security', 'nav-notify']) {
    await expect(page.getByTestId(nav)).toHaveCount(0);
  }
  await expect(page.getByTestId('nav-audit')).toBeVisible();

  // The page posts an answer anyway, with the browser's own login: refused.
  const status = await page.evaluate(async ({ sid, aid }) => {
    const r = await fetch(`/api/v1/sessions/${sid}/approvals/${aid}`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ decision: 'approve' }),
    });
    return r.status;
  }, { sid: gate.session_id, aid: gate.approval_id });
  expect(status).toBe(403);
  const state = await fetch(`${server!.url}/api/v1/gates/${gate.approval_id}`, {
    headers: { authorization: `Bearer ${hook.token}` },
  });
  expect((await state.json()).status).toBe('pending');

  // Made an approver, the same login answers: roles are read again on every request, and
  // the next page draws the card's buttons.
  const auth = { authorization: `Bearer ${server!.token}`, 'content-type': 'application/json' };
  const people = await (await fetch(`${server!.url}/api/v1/people`, { headers: auth })).json();
  const bob = people.find((p: { email: string }) => p.email === 'bob@example.test');
  const changed = await fetch(`${server!.url}/api/v1/people/${bob.id}`, {
    method: 'PUT', headers: auth, body: JSON.stringify({ roles: ['approver'] }),
  });
  expect(changed.status).toBe(200);
  await page.reload();
  await expect(page.locator('body')).toHaveAttribute('data-scope', 'approve');
  await expect(card.getByRole('button', { name: /^Approve/, includeHidden: true })).toHaveCount(1);
  await expect(page.getByTestId('card-read-only')).toHaveCount(0);
});
