// The session sidebar: switching sessions shows the transcript of the chosen one (and what is
// sent goes there); deleting a session removes it from the list, and its URL then says it is
// not available.
import { expect, Page } from '@playwright/test';
import { chooseMode, login, newSession, send, sessionId, test, toolResults, waitLive } from './helpers';

function sessionItem(page: Page, sid: string) {
  return page.getByRole('listitem').filter({ has: page.locator(`a[data-testid=session-link][href="/sessions/${sid}"]`) });
}

async function runInYolo(page: Page, command: string) {
  await chooseMode(page, 'yolo');
  await send(page, `run: ${command}`);
  await expect(toolResults(page, 'ok').filter({ hasText: command })).toHaveCount(1);
}

test('switching sessions in the sidebar shows the chosen transcript, and sending goes there', async ({ page, server }) => {
  await login(page, server);
  const first = sessionId(page);
  await runInYolo(page, 'echo in-first');
  await newSession(page);
  const second = sessionId(page);
  expect(second).not.toBe(first);
  // A new session starts empty.
  await expect(toolResults(page)).toHaveCount(0);
  await runInYolo(page, 'echo in-second');

  const links = page.getByTestId('session-link');
  await expect(links).toHaveCount(2);
  await expect(sessionItem(page, second)).toHaveClass(/\bcurrent\b/);

  // To the first session: its transcript, not the second's.
  await sessionItem(page, first).getByTestId('session-link').click();
  await expect(page).toHaveURL(new RegExp(`/sessions/${first}$`));
  await waitLive(page);
  await expect(toolResults(page)).toHaveCount(1);
  await expect(toolResults(page, 'ok')).toContainText('echo in-first');
  await expect(page.locator('#transcript')).not.toContainText('in-second');
  await expect(sessionItem(page, first)).toHaveClass(/\bcurrent\b/);
  await expect(sessionItem(page, second)).not.toHaveClass(/\bcurrent\b/);
  // The mode picker follows the session too (both were set to yolo; nothing stale).
  await expect(page.getByTestId('session-mode')).toHaveAttribute('data-mode', 'yolo');

  // What is sent now lands in the first session.
  await send(page, 'run: echo back-in-first');
  await expect(toolResults(page, 'ok')).toHaveCount(2);
  await expect(toolResults(page, 'ok').last()).toContainText('echo back-in-first');

  // And back to the second: only its own call.
  await sessionItem(page, second).getByTestId('session-link').click();
  await expect(page).toHaveURL(new RegExp(`/sessions/${second}$`));
  await waitLive(page);
  await expect(toolResults(page)).toHaveCount(1);
  await expect(toolResults(page, 'ok')).toContainText('echo in-second');
  await expect(page.locator('#transcript')).not.toContainText('first');

  // The server's logs agree (a reload renders from them).
  await page.goto(`${server.url}/sessions/${first}`);
  await waitLive(page);
  await expect(toolResults(page, 'ok')).toHaveCount(2);
});

test('deleting the open session removes it from the list and its URL says it is gone', async ({ page, server }) => {
  await login(page, server);
  const kept = sessionId(page);
  await runInYolo(page, 'echo kept');
  await newSession(page);
  const doomed = sessionId(page);
  await runInYolo(page, 'echo doomed');
  await expect(page.getByTestId('session-link')).toHaveCount(2);

  // × asks first; Keep leaves it, as it was.
  await sessionItem(page, doomed).getByRole('button', { name: 'Delete session' }).click();
  await expect(sessionItem(page, doomed).getByTestId('confirm-delete')).toContainText('Delete it and its history?');
  await sessionItem(page, doomed).getByTestId('keep-session').click();
  await expect(sessionItem(page, doomed).getByTestId('confirm-delete')).toHaveCount(0);
  await expect(page.getByTestId('session-link')).toHaveCount(2);
  expect((await page.request.get(`${server.url}/api/v1/sessions/${doomed}`)).status()).toBe(200);
  await sessionItem(page, doomed).getByRole('button', { name: 'Delete session' }).click();
  await sessionItem(page, doomed).getByTestId('confirm-delete-session').click();
  // It leaves the open session: the page goes to a session that still exists.
  await expect(page).not.toHaveURL(new RegExp(`/sessions/${doomed}$`));
  await expect(page).toHaveURL(/\/sessions\/[0-9a-f-]{36}$/);
  await waitLive(page);
  await expect(sessionItem(page, doomed)).toHaveCount(0);
  await expect(sessionItem(page, kept)).toHaveCount(1);
  await expect(page.locator('#transcript')).not.toContainText('echo doomed');

  // Its URL now says the session is not available, and offers a way back.
  await page.goto(`${server.url}/sessions/${doomed}`);
  const missing = page.getByRole('alert').filter({ hasText: 'Session not available' });
  await expect(missing).toBeVisible();
  await expect(page.getByTestId('composer')).toHaveCount(0);
  await expect(page.getByRole('link', { name: 'Open your latest session' })).toBeVisible();
  await expect(sessionItem(page, doomed)).toHaveCount(0);
  // Gone on the server too.
  const res = await page.request.get(`${server.url}/api/v1/sessions/${doomed}`);
  expect(res.status()).toBe(404);
});

test('deleting another session leaves the open one as it is', async ({ page, server }) => {
  await login(page, server);
  const other = sessionId(page);
  await newSession(page);
  const open = sessionId(page);
  await runInYolo(page, 'echo still-here');
  await expect(page.getByTestId('session-link')).toHaveCount(2);

  await sessionItem(page, other).getByRole('button', { name: 'Delete session' }).click();
  await sessionItem(page, other).getByTestId('confirm-delete-session').click();
  await expect(sessionItem(page, other)).toHaveCount(0);
  await expect(page.getByTestId('session-link')).toHaveCount(1);
  await expect(page).toHaveURL(new RegExp(`/sessions/${open}$`));
  await expect(toolResults(page, 'ok')).toContainText('echo still-here');
  await expect(page.getByTestId('connection')).toHaveAttribute('data-state', 'live');
  const res = await page.request.get(`${server.url}/api/v1/sessions/${other}`);
  expect(res.status()).toBe(404);
});

// Sessions you can tell apart: the first message titles a session in words (the whole message
// on hover), a rename sticks (and Esc leaves the title alone), the list shows which sessions have cards waiting, and the page
// links stay in view however many sessions there are.
test('the first message titles a session; rename in place; waiting cards show in the list', async ({ page, server }) => {
  await login(page, server);
  const sid = sessionId(page);
  await expect(page.getByTestId('session-title')).toHaveText('New session');
  await send(page, 'write plan.md: first draft');
  // Issue 39.10: a summary in words, never the raw command; the message itself on hover.
  await expect(page.getByTestId('session-title')).toHaveText('Write plan.md');
  await expect(page.getByTestId('session-title')).toHaveAttribute('title', 'write plan.md: first draft');
  await expect(sessionItem(page, sid).getByTestId('session-link')).toHaveText('Write plan.md');
  // The card waits: the session's entry says so.
  await expect(sessionItem(page, sid).getByTestId('session-pending')).toBeVisible();

  await page.getByTestId('rename-session').click();
  const field = page.getByTestId('title-input');
  await expect(field).toBeFocused();
  await expect(field).toHaveValue('Write plan.md');
  await field.fill('Not this');
  await field.press('Escape');
  await expect(page.getByTestId('session-title')).toHaveText('Write plan.md');
  await page.getByTestId('rename-session').click();
  await page.getByTestId('title-input').fill('   ');
  await page.getByTestId('title-input').press('Enter');
  await expect(page.getByTestId('title-error')).toContainText('must not be empty');
  await page.getByTestId('title-input').fill('Release plan');
  await page.getByTestId('title-input').press('Enter');
  await expect(page.getByTestId('session-title')).toHaveText('Release plan');
  await expect(sessionItem(page, sid).getByTestId('session-link')).toHaveText('Release plan');
  // Kept by the server: a reload, and the card answered, change nothing of it.
  await page.reload();
  await waitLive(page);
  await expect(page.getByTestId('session-title')).toHaveText('Release plan');
  await page.locator('[data-testid=approval-card][data-state=pending] [data-action=approve]').click();
  await expect(sessionItem(page, sid).getByTestId('session-pending')).toHaveCount(0);

  // However many sessions, the page links stay on screen.
  for (let i = 0; i < 30; i++) {
    const res = await page.request.post(`${server.url}/api/v1/sessions`, {
      headers: { authorization: `Bearer ${server.token}` },
      data: { title: `filler ${i}` },
    });
    expect(res.status()).toBe(201);
  }
  await page.reload();
  await waitLive(page);
  await expect(page.getByTestId('session-link')).toHaveCount(31);
  for (const link of ['nav-inbox', 'nav-rules', 'nav-audit', 'nav-answers', 'nav-config', 'nav-tokens']) {
    await expect(page.getByTestId(link)).toBeInViewport();
  }
});

test('a title keeps its room in the sidebar: badges and dots wrap below it, never squeeze it', async ({ page, server }) => {
  await login(page, server);
  await send(page, 'write a-rather-long-file-name.md: hello');
  await chooseMode(page, 'yolo');
  const item = page.getByTestId('session-item').filter({ has: page.getByTestId('session-yolo') });
  await expect(item.getByTestId('session-link')).toHaveText(/^Write a-rather-long/);
  // The Yolo badge, a dot and the × share the row: the title keeps room for ~18 characters.
  const box = await item.getByTestId('session-link').boundingBox();
  expect(box!.width).toBeGreaterThan(120);
});
