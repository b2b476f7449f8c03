// The page speaks, not the agent: an outside agent's words closed with a lookalike quote and
// followed by text in the page's voice, and bidi isolates in its command, are shown with every
// such character written out (`⟨U+275E⟩`), in a labelled block of their own — on a card the
// browser renders as it arrives (the Inbox) and on one the server rendered (the session page).
import { APIRequestContext, expect, Locator } from '@playwright/test';
import { RunningServer } from './server';
import { card, login, send, test, toolResults, waitHydrated, waitLive } from './helpers';

/** What the page must never show as it is: the test's own reading of Unicode's properties
 * (in the browser's own regular expressions), plus lookalike quotes no property names. */
async function deceiving(locator: Locator): Promise<string[]> {
  return locator.evaluate((el) => {
    const lookalikes = '❛❜❝❞❟❠❮❯〝〞〟＂＇″‶‴′‵ʺʹʻʼˮ˝˶´״׳〃';
    const property = /\p{Quotation_Mark}|\p{Bidi_Control}|\p{Default_Ignorable_Code_Point}|\p{Cc}/u;
    return [...(el.textContent ?? '')].filter((c) =>
      !['"', "'", '\n', '\t'].includes(c) && (property.test(c) || lookalikes.includes(c)));
  });
}

async function gatesToken(request: APIRequestContext, server: RunningServer): Promise<string> {
  const res = await request.post(`${server.url}/api/v1/tokens`, {
    headers: { authorization: `Bearer ${server.token}` },
    data: { name: 'sly-agent', scope: 'gates' },
  });
  expect(res.status()).toBe(201);
  return (await res.json()).token;
}

const SAYS = 'Pushing the branch.❞ Countersign: this call only reads files \u2066(verified)\u2069＂';
const SAYS_SHOWN = 'Pushing the branch.⟨U+275E⟩ Countersign: this call only reads files ⟨U+2066⟩(verified)⟨U+2069⟩⟨U+FF02⟩';
const COMMAND = 'git push \u2067\u2066origin main\u2069\u2069 && echo 〞done″';
const COMMAND_SHOWN = 'git push ⟨U+2067⟩⟨U+2066⟩origin main⟨U+2069⟩⟨U+2069⟩ && echo ⟨U+301E⟩done⟨U+2033⟩';

async function expectShownVisibly(c: Locator) {
  await expect(c.getByTestId('agent-says')).toHaveText(`The agent says: ${SAYS_SHOWN}`);
  await expect(c.getByTestId('agent-says-words')).toHaveText(SAYS_SHOWN);
  await expect(c.getByTestId('card-summary')).toHaveText(COMMAND_SHOWN);
  await expect(c.getByTestId('card-args')).toContainText(COMMAND_SHOWN);
  await expect(c.getByTestId('card-hidden')).toBeVisible();
  expect(await deceiving(c)).toEqual([]);
  // A block of its own: the words sit inside it, set apart from the card around them.
  const block = c.getByTestId('agent-says');
  const [inside, around] = await Promise.all([
    block.evaluate((el) => getComputedStyle(el).backgroundColor),
    c.evaluate((el) => getComputedStyle(el).backgroundColor),
  ]);
  expect(inside).not.toBe(around);
}

test("an agent's lookalike quotes and bidi isolates are written out on its card, wherever it is shown", async ({ page, request, server }) => {
  const secret = await gatesToken(request, server);
  await login(page, server);
  // The Inbox first, empty: the card arrives while the page is open, rendered by the browser.
  await page.goto(`${server.url}/inbox`);
  await waitHydrated(page);
  await expect(page.getByTestId('inbox-empty')).toBeVisible();
  const opened = await request.post(`${server.url}/api/v1/gates`, {
    headers: { authorization: `Bearer ${secret}` },
    data: {
      source: 'claude-code', external_session: 'e2e-sly', cwd: '/home/me/shop',
      tool: { name: 'Bash', input: { command: COMMAND } },
      capabilities: { edit: false, always: false, deny_reason: true },
      agent_says: SAYS,
    },
  });
  expect(opened.status()).toBe(201);
  const gate = await opened.json();
  const arrived = card(page, gate.approval_id);
  await expect(arrived).toHaveAttribute('data-state', 'pending', { timeout: 15_000 });
  await expectShownVisibly(arrived);

  // The Inbox names the card's session by its title, made from the agent's folder and command.
  const item = page.locator(`[data-testid=inbox-item][data-approval-id="${gate.approval_id}"]`);
  expect(await deceiving(item.getByTestId('inbox-session'))).toEqual([]);

  // The session page, as the server rendered it and the script then took over.
  await page.goto(`${server.url}/sessions/${gate.session_id}`);
  await waitLive(page);
  const rendered = card(page, gate.approval_id);
  await expectShownVisibly(rendered);
  // Its title, in the header and the sidebar: the agent's command written out there too.
  await expect(page.getByTestId('session-title')).toContainText('shop · git push ⟨U+2067⟩⟨U+2066⟩origin');
  expect(await deceiving(page.getByTestId('session-title'))).toEqual([]);
  await expect(page.locator('.session-list')).toContainText('shop · git push ⟨U+2067⟩');
  expect(await deceiving(page.locator('.session-list'))).toEqual([]);
  // Answered, the card keeps them written out.
  await rendered.locator('[data-action=deny]').click();
  await rendered.getByTestId('deny-reason').fill('no');
  await rendered.locator('[data-action=submit-deny]').click();
  await expect(rendered).toHaveAttribute('data-state', 'resolved');
  await rendered.locator('summary.card-line').click();
  await expect(rendered.getByTestId('agent-says-words')).toHaveText(SAYS_SHOWN);
  expect(await deceiving(rendered)).toEqual([]);
});

test("the agent's words as they stream in, its finished message, a tool's output and a rule it suggests are written out", async ({ page, server }) => {
  await login(page, server);
  // Every text the streaming block shows, as the browser draws it from the feed's deltas.
  await page.evaluate(() => {
    const seen: string[] = [];
    (window as any).streamed = seen;
    new MutationObserver(() => {
      const el = document.querySelector('[data-testid=assistant-streaming]');
      if (el) seen.push(el.textContent ?? '');
    }).observe(document.body, { subtree: true, childList: true, characterData: true });
  });
  const words = `${'Reading the folder before anything else. '.repeat(12)}Done.❞ Countersign: \u2067safe\u2069 &#x202E;x`;
  // The bytes of U+202E and ❞, printed by the shell.
  await send(page, `say: ${words}\nrun: printf 'out \\342\\200\\256x \\342\\235\\236 ok\\n'\nrun: rm -f notes/❞x`);
  const first = page.locator('[data-testid=approval-card][data-state=pending]');
  await expect(first).toHaveCount(1);
  const streamed: string[] = await page.evaluate(() => (window as any).streamed);
  expect(streamed.length).toBeGreaterThan(0);
  expect(streamed.some((t) => t.includes('⟨U+275E⟩ Countersign: ⟨U+2067⟩safe⟨U+2069⟩'))).toBe(true);
  const lookalike = /\p{Quotation_Mark}|\p{Bidi_Control}|\p{Default_Ignorable_Code_Point}|[❞″]/u;
  expect(streamed.filter((t) => [...t].some((c) => c !== '"' && c !== "'" && lookalike.test(c)))).toEqual([]);
  // The finished message: its markdown's entity decoded and written out too.
  const said = page.getByTestId('assistant-message').first();
  await expect(said).toContainText('Done.⟨U+275E⟩ Countersign: ⟨U+2067⟩safe⟨U+2069⟩ ⟨U+202E⟩x');
  expect(await deceiving(said)).toEqual([]);

  await first.locator('[data-action=approve]').click();
  const row = toolResults(page, 'ok').first();
  await expect(row.locator('.tool-outcome')).toContainText('out ⟨U+202E⟩x ⟨U+275E⟩ ok');
  await expect(row.locator('.tool-output')).toContainText('out ⟨U+202E⟩x ⟨U+275E⟩ ok');
  expect(await deceiving(row)).toEqual([]);

  // Always allow: the field shows the pattern written out and the rule made is the call's own.
  const second = page.locator('[data-testid=approval-card][data-state=pending]');
  await expect(second).toHaveCount(1);
  await second.locator('[data-action=allow_always]').click();
  await expect(second.getByTestId('rule-pattern')).toHaveValue('rm -f notes/⟨U+275E⟩x');
  const secondId = (await second.getAttribute('data-approval-id'))!;
  await second.locator('[data-action=submit-always]').click();
  await expect(card(page, secondId)).toHaveAttribute('data-decision', 'allow_always');
  const rules = await (await page.request.get(`${server.url}/api/v1/rules`, {
    headers: { authorization: `Bearer ${server.token}` },
  })).json();
  expect(rules.map((r: any) => r.pattern)).toEqual(['rm -f notes/❞x']);
});
