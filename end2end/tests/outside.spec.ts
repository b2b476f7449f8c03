// Outside agents in the browser: the Tokens page makes a token (its secret shown once) and
// revokes it; Claude Code's hook (the built binary's `countersign hook claude-code`, with a
// `gates` token and Claude's own payload on stdin) opens a card that reads naturally, and the
// person's answer in the browser is what the hook prints for Claude — an edit included.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { APIRequestContext, expect, Page } from '@playwright/test';
import { BIN, RunningServer } from './server';
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

/** Runs `countersign hook claude-code` as Claude Code would: payload on stdin, answer on stdout. */
function runHook(server: RunningServer, secret: string, payload: object): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(BIN, ['hook', 'claude-code', '--url', server.url, '--token', secret], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', RUST_LOG: 'warn' },
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => { stdout += d.toString(); });
  child.stderr!.on('data', (d) => { stderr += d.toString(); });
  child.stdin!.end(JSON.stringify(payload));
  return new Promise((ok) => child.on('exit', (code) => ok({ code, stdout, stderr })));
}

async function onlyPending(request: APIRequestContext, server: RunningServer) {
  let found: any = null;
  await expect.poll(async () => {
    const res = await request.get(`${server.url}/api/v1/approvals?status=pending`, {
      headers: { authorization: `Bearer ${server.token}` },
    });
    const list = await res.json();
    found = list.length === 1 ? list[0] : null;
    return list.length;
  }).toBe(1);
  return found;
}

test("Claude Code's hook waits for the card and prints the answer given in the browser", async ({ page, request, server }) => {
  await openTokensPage(page, server);
  const secret = await createToken(page, 'claude-hook', 'gates');
  const hook = runHook(server, secret, {
    session_id: 'e2e-claude', cwd: '/home/me/shop', permission_mode: 'default',
    hook_event_name: 'PreToolUse', tool_name: 'Bash', tool_use_id: 'toolu_e2e_1',
    tool_input: { command: 'npm publish', description: 'Publish the package' },
  });
  const gate = await onlyPending(request, server);
  expect(gate.kind).toBe('external');

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
  // Where it runs: the same command means another thing in another folder.
  await expect(c.getByTestId('card-runs-in')).toHaveText('Runs in /home/me/shop');

  await c.locator('[data-action=approve]').click();
  const out = await hook;
  expect(out.code, out.stderr).toBe(0);
  expect(JSON.parse(out.stdout)).toEqual({
    hookSpecificOutput: {
      hookEventName: 'PreToolUse',
      permissionDecision: 'allow',
      permissionDecisionReason: 'Approved in Countersign',
    },
  });
  await expect(c).toHaveAttribute('data-state', 'resolved');
  await expect(c.getByTestId('card-outcome')).toContainText('Approved by you');

  // The long-poll an agent reads names who answered: the browser.
  const state = await longPoll(request, server, secret, gate.approval_id);
  expect(state.status).toBe('approved');
  expect(state.actor).toBe('browser');
});

test("an Edit answered with Edit gives Claude Code the person's input", async ({ page, request, server }) => {
  await openTokensPage(page, server);
  const secret = await createToken(page, 'claude-hook', 'gates');
  const hook = runHook(server, secret, {
    session_id: 'e2e-claude-2', cwd: '/home/me/shop', permission_mode: 'default',
    hook_event_name: 'PreToolUse', tool_name: 'Edit', tool_use_id: 'toolu_e2e_2',
    tool_input: { file_path: 'src/app.js', old_string: 'port = 80', new_string: 'port = 8080' },
  });
  const gate = await onlyPending(request, server);

  await page.goto(`${server.url}/sessions/${gate.session_id}`);
  await waitLive(page);
  const c = card(page, gate.approval_id);
  await expect(c.getByTestId('card-badge')).toHaveText('Edit');
  await expect(c.getByTestId('card-summary')).toContainText('src/app.js');
  // A file edit reads as a diff.
  await expect(c.getByTestId('diff')).toContainText('port = 8080');
  // The session is named by the agent's folder and first call, and the list shows it waits.
  const entry = page.locator(`[data-testid=session-item][data-session-id="${gate.session_id}"]`);
  await expect(entry.getByTestId('session-link')).toContainText('shop · ');
  await expect(entry.getByTestId('session-link')).toContainText('src/app.js');
  await expect(page.getByTestId('session-title')).toContainText('shop · ');
  await expect(entry.getByTestId('session-pending')).toBeVisible();

  await c.locator('[data-action=edit]').click();
  const field = c.getByTestId('edit-input');
  await expect(field).toHaveValue('port = 8080');
  await field.fill('port = 9090');
  await c.locator('[data-action=submit-edit]').click();
  const out = await hook;
  expect(out.code, out.stderr).toBe(0);
  const answer = JSON.parse(out.stdout).hookSpecificOutput;
  expect(answer.permissionDecision).toBe('allow');
  expect(answer.updatedInput).toEqual({ file_path: 'src/app.js', old_string: 'port = 80', new_string: 'port = 9090' });
  await expect(c.getByTestId('card-outcome')).toContainText('Approved (edited) by you');
  // The card shows what Claude Code was told to run, not what it proposed.
  await expect(c.getByTestId('edited-chip')).toBeVisible();
  await c.locator('summary.card-line').click();
  await expect(c.getByTestId('edited-by')).toContainText('Edited by you');
  await expect(c.getByTestId('edit-diff')).toContainText('-port = 8080');
  await expect(c.getByTestId('edit-diff')).toContainText('+port = 9090');
  await expect(c.getByTestId('card-args')).toContainText('port = 9090');
  await expect(c.getByTestId('card-args')).not.toContainText('8080');
  await expect(c.getByTestId('card-proposed-args')).toContainText('port = 8080');
  await expect(entry.getByTestId('session-pending')).toHaveCount(0);
});

test("the card says what the agent says it is doing: the transcript's last words, beside the arguments", async ({ page, request, server }) => {
  await openTokensPage(page, server);
  const secret = await createToken(page, 'claude-hook', 'gates');
  // Claude Code's transcript as the hook finds it: the person's prompt, then the agent's words.
  const dir = mkdtempSync(join(tmpdir(), 'cs-transcript-'));
  const transcript = join(dir, 'session.jsonl');
  writeFileSync(transcript, [
    { type: 'user', message: { role: 'user', content: 'tidy the repo' } },
    { type: 'assistant', message: { content: [
      { type: 'text', text: 'The build folder is stale, so I will remove it.' },
      { type: 'tool_use', name: 'Bash', input: { command: 'rm -rf build' } },
    ] } },
  ].map((l) => JSON.stringify(l)).join('\n'));
  const hook = runHook(server, secret, {
    session_id: 'e2e-words', cwd: '/home/me/shop', permission_mode: 'default',
    hook_event_name: 'PermissionRequest', tool_name: 'Bash', transcript_path: transcript,
    tool_input: { command: 'rm -rf build' },
  });
  const gate = await onlyPending(request, server);
  await page.goto(`${server.url}/sessions/${gate.session_id}`);
  await waitLive(page);
  const c = card(page, gate.approval_id);
  await expect(c.getByTestId('agent-says')).toHaveText('The agent says: The build folder is stale, so I will remove it.');
  // Labelled as the agent's claim, and the arguments are still there to read.
  await expect(c.getByTestId('card-summary')).toHaveText('rm -rf build');
  await expect(c.getByTestId('card-args')).toContainText('rm -rf build');
  await c.locator('[data-action=approve]').click();
  expect((await hook).code).toBe(0);
  // The resolved card keeps the words.
  await expect(c).toHaveAttribute('data-state', 'resolved');
  await c.locator('summary.card-line').click();
  await expect(c.getByTestId('agent-says')).toContainText('The build folder is stale');
  rmSync(dir, { recursive: true, force: true });
});
