// The reviewer in the browser (issue 40): in a class the person trusted it with, a card it
// escalates shows its concern (live, after a reload, in the Inbox); a card it answered says so
// with its reason and offers "I would not have approved this", which reports the false approval
// and ends the class's trust.
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

test('the reviewer: its concern on a card it escalates, its reason on a card it answered, which can be reported', async ({ page }) => {
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

  // In the trusted class, a card the reviewer escalates waits for the person with its concern
  // on it: live on the open page, after a reload, and in the Inbox.
  await login(page, server);
  const first = await open('echo card');
  await expect.poll(async () => (await api('GET', `/api/v1/gates/${first.approval_id}`, agent)).json.status)
    .toBe('approved');
  await page.goto(`${server.url}/sessions/${first.session_id}`);
  await waitLive(page);
  const doubtful = await open('npm publish');
  const held = page.locator(`[data-testid=approval-card][data-approval-id="${doubtful.approval_id}"]`);
  await expect(held).toHaveAttribute('data-state', 'pending');
  const concern = held.getByTestId('reviewer-concern');
  // The page's label, then the reviewer's own words as a quotation (no text of the card).
  await expect(concern).toContainText("Reviewer's concern:");
  await expect(concern.getByTestId('reviewer-words')).toHaveText('this exact command was never approved here before');
  // Near the buttons, which still answer it.
  await expect(held.locator('[data-action=approve]')).toBeVisible();
  await page.reload();
  await waitLive(page);
  await expect(held.getByTestId('reviewer-concern')).toContainText('never approved here');
  await page.goto(`${server.url}/inbox`);
  const row = page.locator(`[data-testid=inbox-item][data-approval-id="${doubtful.approval_id}"]`);
  await expect(row.getByTestId('reviewer-concern')).toContainText("Reviewer's concern:");
  // The agent's gate state says nothing of it.
  const seen = await api('GET', `/api/v1/gates/${doubtful.approval_id}`, agent);
  expect(JSON.stringify(seen.json)).not.toContain('never approved here');
  const denied = await api('POST', `/api/v1/sessions/${doubtful.session_id}/approvals/${doubtful.approval_id}`,
    server.token, { decision: 'deny' });
  expect(denied.status).toBe(200);

  const gate = await open('echo card');
  await expect.poll(async () => (await api('GET', `/api/v1/gates/${gate.approval_id}`, agent)).json.status)
    .toBe('approved');

  await page.goto(`${server.url}/sessions/${gate.session_id}`);
  await waitLive(page);
  const card = page.locator(`[data-testid=approval-card][data-approval-id="${gate.approval_id}"]`);
  await expect(card).toHaveAttribute('data-state', 'resolved');
  await expect(card.getByTestId('card-outcome')).toContainText('by the reviewer');
  const answer = card.getByTestId('reviewer-answer');
  await expect(answer).toContainText("Approved by the reviewer. Reviewer's reason:");
  await expect(answer.getByTestId('reviewer-words')).toHaveText(/^this exact command was approved \d+ times here, never denied$/);
  await answer.locator('[data-action=disagree]').click();
  await expect(card.getByTestId('reviewer-reported'))
    .toHaveText('Reported: the reviewer no longer answers exec cards');
  const state = (await api('GET', '/api/v1/review', server.token)).json;
  const exec = state.classes.find((c: { class: string }) => c.class === 'exec');
  expect(exec.trusted).toBe(false);
  expect(exec.false_approvals).toBe(1);
});
