// The page speaks, not the agent: an outside agent's words closed with a lookalike quote and
// followed by text in the page's voice, and bidi isolates in its command, are shown with every
// such character written out (`⟨U+275E⟩`), in a labelled block of their own — on a card the
// browser renders as it arrives (the Inbox) and on one the server rendered (the session page).
import { APIRequestContext, expect, Locator } from '@playwright/test';
import { RunningServer } from './server';
import { card, login, test, waitHydrated, waitLive } from './helpers';

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

  // The session page, as the server rendered it and the script then took over.
  await page.goto(`${server.url}/sessions/${gate.session_id}`);
  await waitLive(page);
  const rendered = card(page, gate.approval_id);
  await expectShownVisibly(rendered);
  // Answered, the card keeps them written out.
  await rendered.locator('[data-action=deny]').click();
  await rendered.getByTestId('deny-reason').fill('no');
  await rendered.locator('[data-action=submit-deny]').click();
  await expect(rendered).toHaveAttribute('data-state', 'resolved');
  await rendered.locator('summary.card-line').click();
  await expect(rendered.getByTestId('agent-says-words')).toHaveText(SAYS_SHOWN);
  expect(await deceiving(rendered)).toEqual([]);
});
