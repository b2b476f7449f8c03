// The reviewer in the browser (issue 40): a card it answered, in a class the person trusted it
// with, says so with its reason and offers "I would not have approved this", which reports the
// false approval and ends the class's trust.
import { test, expect } from '@playwright/test';
import { startServer, RunningServer } from './server';
import { login, waitLive } from './helpers';

let server: RunningServer;
test.beforeAll(async () => {
  server = await startServer([], { config: '[review]\nmode = "on"\n' });
});
test.afterAll(async () => { await server.stop(); });

async function api(method: string, path: string, token: string, body?: unknown) {
  const res = await fetch(server.url + path, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: await res.json().catch(() => null) };
}

test('a card the reviewer answered shows its reason and can be reported', async ({ page }) => {
  test.setTimeout(120_000);
  const made = await api('POST', '/api/v1/tokens', server.token, { name: 'agent', scope: 'gates' });
  const agent = made.json.token as string;
  const open = async (command: string) => (await api('POST', '/api/v1/gates', agent, {
    source: 'codex', external_session: 'e2e', cwd: '/home/me/app',
    tool: { name: 'Bash', input: { command } },
  })).json;
  // 55 `echo card` cards the person approves: the last 50 predicted `approve` by the history
  // reviewer (it matches the exact command), in agreement (a prediction that arrives after
  // the answer is still compared).
  for (let i = 0; i < 55; i++) {
    const gate = await open('echo card');
    await new Promise((r) => setTimeout(r, 30));
    const answered = await api('POST', `/api/v1/sessions/${gate.session_id}/approvals/${gate.approval_id}`,
      server.token, { decision: 'approve' });
    expect(answered.status).toBe(200);
  }
  await expect.poll(async () => {
    const trusted = await api('PUT', '/api/v1/review/classes/exec/codex', server.token, { trusted: true });
    return trusted.status;
  }, { timeout: 20_000 }).toBe(200);

  const gate = await open('echo card');
  await expect.poll(async () => (await api('GET', `/api/v1/gates/${gate.approval_id}`, agent)).json.status)
    .toBe('approved');

  await login(page, server);
  await page.goto(`${server.url}/sessions/${gate.session_id}`);
  await waitLive(page);
  const card = page.locator(`[data-testid=approval-card][data-approval-id="${gate.approval_id}"]`);
  await expect(card).toHaveAttribute('data-state', 'resolved');
  await expect(card.getByTestId('card-outcome')).toContainText('by the reviewer');
  const answer = card.getByTestId('reviewer-answer');
  await expect(answer).toContainText('Approved by the reviewer — ');
  await expect(answer).toContainText('echo');
  await answer.locator('[data-action=disagree]').click();
  await expect(card.getByTestId('reviewer-reported'))
    .toHaveText('Reported: the reviewer no longer answers exec cards');
  const state = (await api('GET', '/api/v1/review', server.token)).json;
  const exec = state.classes.find((c: { class: string }) => c.class === 'exec');
  expect(exec.trusted).toBe(false);
  expect(exec.false_approvals).toBe(1);
});
