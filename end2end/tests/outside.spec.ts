// Outside agents in the browser: the Tokens page makes a token (its secret shown once) and
// revokes it; an outside agent's gate (opened over the gates API with a `gates` token, as the
// Claude Code hook does) shows as a card that reads naturally, and the person's answer in the
// browser is what the agent's long-poll receives — an edit included.
import { APIRequestContext, expect, Page } from '@playwright/test';
import { RunningServer } from './server';
import { card, test, waitHydrated, waitLive } from './helpers';

async function openTokensPage(page: Page, server: RunningServer) {
  await page.goto(`${server.url}/login?token=${server.token}`);
  await page.goto(`${server.url}/tokens`);
  await waitHydrated(page);
}

async function createToken(page: Page, name: string, scope: string): Promise<string> {
  await page.getByTestId('token-name').fill(name);
  await page.getByTestId('token-scope').selectOption(scope);
  await page.getByTestId('create-token').click();
  await expect(page.getByTestId('new-secret')).toContainText(`Token “${name}” created, scope ${scope}.`);
  const secret = await page.getByTestId('token-secret').inputValue();
  expect(secret).toMatch(/^cst_[0-9a-f]{48}$/);
  return secret;
}

/** Opens an outside gate as an agent's hook would: with its `gates` token, never the admin's. */
async function openGate(request: APIRequestContext, server: RunningServer, secret: string, tool: object) {
  const res = await request.post(`${server.url}/api/v1/gates`, {
    headers: { authorization: `Bearer ${secret}` },
    data: { source: 'claude-code', external_session: 'e2e-1', cwd: '/home/me/shop', tool },
  });
  expect(res.status()).toBe(201);
  return res.json();
}

async function longPoll(request: APIRequestContext, server: RunningServer, secret: string, id: string) {
  const res = await request.get(`${server.url}/api/v1/gates/${id}?wait=30`, {
    headers: { authorization: `Bearer ${secret}` },
    timeout: 40_000,
  });
  expect(res.status()).toBe(200);
  return res.json();
}

test('tokens page: create shows the secret once, the secret works, revoke stops it', async ({ page, request, server }) => {
  await openTokensPage(page, server);
  await expect(page.getByTestId('tokens-empty')).toBeVisible();
  const secret = await createToken(page, 'phone', 'approve');
  const row = page.locator('[data-testid=token-row][data-token=phone]');
  await expect(row.getByTestId('token-scope-cell')).toHaveText('approve');
  await expect(row.getByTestId('token-last-used')).toHaveText('never');

  // The secret is real: it reads approvals, and its scope keeps it from the configuration.
  const auth = { authorization: `Bearer ${secret}` };
  expect((await request.get(`${server.url}/api/v1/approvals`, { headers: auth })).status()).toBe(200);
  expect((await request.get(`${server.url}/api/v1/config`, { headers: auth })).status()).toBe(403);

  // Shown once: after a reload only the row is there, never the secret.
  await page.reload();
  await waitHydrated(page);
  await expect(page.getByTestId('new-secret')).toHaveCount(0);
  await expect(page.locator('body')).not.toContainText(secret);
  await expect(row).toBeVisible();

  // A second token of the same name is refused with the server's reason.
  await page.getByTestId('token-name').fill('phone');
  await page.getByTestId('create-token').click();
  await expect(page.getByTestId('token-error')).toHaveAttribute('data-code', 'name_taken');

  // Revoke asks first; Keep leaves it; Revoke stops it at once.
  await row.getByTestId('revoke-token').click();
  await row.getByTestId('cancel-revoke').click();
  await expect(row).toBeVisible();
  await row.getByTestId('revoke-token').click();
  await row.getByTestId('confirm-revoke').click();
  await expect(row).toHaveCount(0);
  expect((await request.get(`${server.url}/api/v1/approvals`, { headers: auth })).status()).toBe(401);
});

test('an outside Bash gate answered in the browser reaches the waiting agent', async ({ page, request, server }) => {
  await openTokensPage(page, server);
  const secret = await createToken(page, 'claude-hook', 'gates');
  const gate = await openGate(request, server, secret, {
    name: 'Bash',
    input: { command: 'npm publish', description: 'Publish the package' },
  });
  expect(gate.status).toBe('pending');

  // The sidebar lists the agent's session with its source; its page has no composer.
  const item = page.locator(`[data-testid=session-item][data-session-id="${gate.session_id}"]`);
  await expect(item.getByTestId('source-badge')).toHaveText('Claude Code');
  await page.goto(`${server.url}/sessions/${gate.session_id}`);
  await waitLive(page);
  await expect(page.getByTestId('composer')).toHaveCount(0);
  await expect(page.getByTestId('outside-note')).toContainText("Claude Code's requests");

  const c = card(page, gate.approval_id);
  await expect(c).toHaveAttribute('data-state', 'pending');
  await expect(c.getByTestId('card-badge')).toHaveText('Bash');
  await expect(c.getByTestId('card-summary')).toHaveText('npm publish');
  await expect(c.getByTestId('source-badge')).toHaveText('Claude Code');

  const answer = longPoll(request, server, secret, gate.approval_id);
  await c.locator('[data-action=approve]').click();
  const state = await answer;
  expect(state.status).toBe('approved');
  expect(state.decision).toBe('approve');
  expect(state.actor).toBe('browser');
  await expect(c).toHaveAttribute('data-state', 'resolved');
  await expect(c.getByTestId('card-outcome')).toContainText('Approved by you');
});

test('an outside edit answered with Edit gives the agent the edited input', async ({ page, request, server }) => {
  await openTokensPage(page, server);
  const secret = await createToken(page, 'claude-hook', 'gates');
  const res = await request.post(`${server.url}/api/v1/gates`, {
    headers: { authorization: `Bearer ${secret}` },
    data: {
      source: 'claude-code', external_session: 'e2e-2', cwd: '/home/me/shop',
      tool: { name: 'Edit', input: { file_path: 'src/app.js', old_string: 'port = 80', new_string: 'port = 8080' } },
      capabilities: { edit: true },
    },
  });
  expect(res.status()).toBe(201);
  const gate = await res.json();

  await page.goto(`${server.url}/sessions/${gate.session_id}`);
  await waitLive(page);
  const c = card(page, gate.approval_id);
  await expect(c.getByTestId('card-badge')).toHaveText('Edit');
  await expect(c.getByTestId('card-summary')).toContainText('src/app.js');
  // A file edit reads as a diff.
  await expect(c.locator('.diff')).toContainText('port = 8080');

  const answer = longPoll(request, server, secret, gate.approval_id);
  await c.locator('[data-action=edit]').click();
  const field = c.getByTestId('edit-input');
  await expect(field).toHaveValue('port = 8080');
  await field.fill('port = 9090');
  await c.locator('[data-action=submit-edit]').click();
  const state = await answer;
  expect(state.status).toBe('approved');
  expect(state.decision).toBe('edit');
  expect(state.updated_input).toEqual({ file_path: 'src/app.js', old_string: 'port = 80', new_string: 'port = 9090' });
  await expect(c.getByTestId('card-outcome')).toContainText('Approved (edited) by you');
});
