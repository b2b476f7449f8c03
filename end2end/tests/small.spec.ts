// The smaller things a careful reader notices: the answer comes before what it ran, a deny's
// reason is said once, a call a rule ran says which rule, a config card says old → new, a
// budget card has no empty Arguments, an `ask deploy:` card is a Decision (not "other"), no
// raw backticks, diff headers that name the file once, and the Audit newest first with its
// subjects linked to where they happened.
import { expect } from '@playwright/test';
import { card, login, pendingCards, send, sessionId, test, toolResults, waitHydrated } from './helpers';

test('the answer before its result, a reason said once, the rule that ran a call named', async ({ page, server }) => {
  await login(page, server);
  await send(page, 'run: echo by-rule');
  const first = pendingCards(page);
  const id = (await first.getAttribute('data-approval-id'))!;
  await first.locator('[data-action=allow_always]').click();
  await first.locator('[data-action=submit-always]').click();
  const row = toolResults(page, 'ok');
  await expect(row).toHaveCount(1);
  // The resolved card stands before the row of the call it let run.
  const before = await card(page, id).evaluate((c, r) => !!(c.compareDocumentPosition(r!) & Node.DOCUMENT_POSITION_FOLLOWING), await row.elementHandle());
  expect(before).toBe(true);
  // The same call again runs by the rule, and its row says so.
  await send(page, 'run: echo by-rule');
  await expect(toolResults(page, 'ok')).toHaveCount(2);
  await expect(toolResults(page, 'ok').nth(1).getByTestId('allowed-by-rule')).toHaveText(/^allowed by rule echo( \*| by-rule)$/);
  // The agent's summary is rendered, not raw markdown.
  await expect(page.getByTestId('assistant-message').last().locator('code').first()).toBeVisible();
  await expect(page.getByTestId('assistant-message').last()).not.toContainText('`');

  await send(page, 'write said-once.txt: x');
  const deny = pendingCards(page);
  const denied = (await deny.getAttribute('data-approval-id'))!;
  await deny.locator('[data-action=deny]').click();
  await deny.getByTestId('deny-reason').fill('not-this-file-please');
  await deny.locator('[data-action=submit-deny]').click();
  const deniedRow = toolResults(page, 'denied');
  await expect(deniedRow).toHaveCount(1);
  await expect(card(page, denied).getByTestId('card-outcome')).toContainText('not-this-file-please');
  await expect(deniedRow.locator('.tool-outcome')).toHaveText(' → denied, not run');
  await expect(deniedRow).not.toHaveAttribute('open', '');
});

test('config old → new, a budget card without Arguments, a decision not labelled other', async ({ page, server }) => {
  await login(page, server);
  await send(page, 'set tools.shell_timeout_secs = 60');
  const config = pendingCards(page);
  await expect(config.getByTestId('card-summary')).toHaveText('config_set tools.shell_timeout_secs: 120 → 60');
  await config.locator('[data-action=deny]').click();
  await config.locator('[data-action=submit-deny]').click();

  await send(page, 'ask deploy: Ship the release | today, after the tests');
  const decision = pendingCards(page);
  await expect(decision.getByTestId('card-badge')).toHaveText('Decision');
  await decision.locator('[data-action=approve]').click();

  await send(page, 'loop 60');
  const budget = page.locator('[data-testid=approval-card][data-state=pending][data-kind=budget]');
  await expect(budget).toHaveCount(1, { timeout: 60_000 });
  await expect(budget.getByTestId('card-args')).toHaveCount(0);
  await budget.locator('[data-action=deny]').click();
});

test("an outside agent's file diff names the file once; the Audit reads newest first, linked", async ({ page, request, server }) => {
  await login(page, server);
  const opened = await request.post(`${server.url}/api/v1/gates`, {
    headers: { authorization: `Bearer ${server.token}` },
    data: {
      source: 'claude-code', external_session: 'diff-headers', cwd: '/home/me/app',
      tool: { name: 'Write', input: { file_path: '/home/me/app/notes/new.md', content: 'hello\n' } },
    },
  });
  expect(opened.status()).toBe(201);
  const gate = await opened.json();
  await page.goto(`${server.url}/sessions/${gate.session_id}`);
  const c = card(page, gate.approval_id);
  await expect(c.getByTestId('diff')).toContainText('+++ /home/me/app/notes/new.md');
  await expect(c.getByTestId('diff')).not.toContainText('a//');
  await c.locator('[data-action=approve]').click();
  await expect(c).toHaveAttribute('data-state', 'resolved');

  await page.goto(`${server.url}/audit`);
  await waitHydrated(page);
  const ns = await page.getByTestId('audit-row').evaluateAll((rows) => rows.map((r) => Number(r.getAttribute('data-n'))));
  expect(ns.length).toBeGreaterThan(1);
  expect([...ns].sort((a, b) => b - a)).toEqual(ns);
  const resolved = page.locator('[data-testid=audit-row][data-action=gate_resolved]').first();
  await expect(resolved.getByTestId('audit-subject-link')).toHaveAttribute('href', `/sessions/${gate.session_id}#gate-${gate.approval_id}`);
  await resolved.getByTestId('audit-subject-link').click();
  await expect(page).toHaveURL(new RegExp(`/sessions/${gate.session_id}#gate-${gate.approval_id}$`));
  expect(sessionId(page)).toBe(gate.session_id);
});
