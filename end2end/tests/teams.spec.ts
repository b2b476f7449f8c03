// Two people approve one card (issue 41): a command routed to the maintainers with quorum 2.
// Alice and Bob sign in through the real provider (npm `oidc-provider`,
// end2end/oidc/provider.mjs) in two browser contexts; Carol, who is not a maintainer, sees the
// card without its buttons. Alice's approval shows on Bob's card as it happens; Bob's resolves
// it, and both cards name both of them.
import { Browser, expect, Page, test } from '@playwright/test';
import { RunningServer } from './server';
import { invite as inviteTo, signedIn as signedInTo, startTeam, stopTeam, Team } from './idp';
import { card, waitLive } from './helpers';

const ROUTES = '[[approvals.route]]\nwhen = "exec"\napprovers = ["group:maintainers"]\nquorum = 2\n';

let team: Team | undefined;
let server: RunningServer | undefined;

async function invite(email: string, groups: string[]) {
  await inviteTo(server!, email, groups);
}

test.beforeAll(async () => {
  team = await startTeam('teams.spec.ts', ROUTES);
  server = team?.server;
  if (!server) return;
  await invite('alice@example.test', ['maintainers']);
  await invite('bob@example.test', ['maintainers']);
  await invite('carol@other.test', ['oncall']);
});

test.afterAll(async () => {
  await stopTeam(team);
});

/** A new browser (its own cookies) signed in as `account` through the provider's form. */
async function signedIn(browser: Browser, account: string): Promise<Page> {
  return signedInTo(browser, server!, account);
}

/** Opens a command's card as an outside agent (with the admin token); its ids. */
async function openCommand(command: string): Promise<{ sid: string; aid: string }> {
  const opened = await fetch(`${server!.url}/api/v1/gates`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server!.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      source: 'codex', external_session: 'team-e2e', cwd: '/home/me/app',
      tool: { name: 'Bash', input: { command } },
      capabilities: { edit: true },
    }),
  });
  expect(opened.status).toBe(201);
  const state = await opened.json();
  return { sid: state.session_id, aid: state.approval_id };
}

test('two maintainers approve one card in their own browsers; a third person sees no buttons', async ({ browser }) => {
  test.skip(!server, 'oidc-provider is not installed');
  const alice = await signedIn(browser, 'alice');
  const bob = await signedIn(browser, 'bob');
  const carol = await signedIn(browser, 'carol');
  const { sid, aid } = await openCommand('make release');

  for (const page of [alice, bob, carol]) {
    await page.goto(`${server!.url}/sessions/${sid}`);
    await waitLive(page);
    const c = card(page, aid);
    await expect(c).toHaveAttribute('data-state', 'pending');
    await expect(c.getByTestId('card-route-needs')).toHaveText('Needs 2 of: group maintainers');
  }
  // Carol is no maintainer: the card says so, and offers her nothing to press.
  await expect(card(carol, aid).getByTestId('card-not-yours')).toBeVisible();
  await expect(card(carol, aid).locator('[data-action=approve]')).toHaveCount(0);

  // Alice approves: her card waits for one more (and says so), and Bob's shows her approval
  // as it lands.
  await card(alice, aid).locator('[data-action=approve]').click();
  await expect(card(alice, aid).getByTestId('card-approval')).toContainText('Approved by Alice Example');
  await expect(card(alice, aid)).toHaveAttribute('data-state', 'pending');
  await expect(card(alice, aid).locator('[data-action=approve]')).toBeVisible();
  const onBobs = card(bob, aid).getByTestId('card-approval');
  await expect(onBobs).toHaveCount(1);
  await expect(onBobs).toContainText('Approved by Alice Example');
  await expect(card(carol, aid).getByTestId('card-approval')).toContainText('Approved by Alice Example');

  // Bob's approval is the second: the card resolves everywhere, naming both.
  await card(bob, aid).locator('[data-action=approve]').click();
  for (const page of [alice, bob, carol]) {
    const c = card(page, aid);
    await expect(c).toHaveAttribute('data-state', 'resolved');
    await expect(c.getByTestId('card-outcome')).toContainText('Approved by Alice Example (alice@example.test), and by Bob Example (bob@example.test)');
  }

  // The audit names each person.
  const audit = await fetch(`${server!.url}/api/v1/audit?subject=${aid}`, {
    headers: { authorization: `Bearer ${server!.token}` },
  });
  const entries: { actor: string; action: string }[] = await audit.json();
  const given = entries.filter((e) => e.action === 'approval_given').map((e) => e.actor);
  expect(given).toEqual(['person:alice@example.test', 'person:bob@example.test']);
  for (const page of [alice, bob, carol]) await page.context().close();
});

test("one maintainer's edit shows on the other's card, and the count starts again", async ({ browser }) => {
  test.skip(!server, 'oidc-provider is not installed');
  const alice = await signedIn(browser, 'alice');
  const bob = await signedIn(browser, 'bob');
  const { sid, aid } = await openCommand('make deploy');
  for (const page of [alice, bob]) {
    await page.goto(`${server!.url}/sessions/${sid}`);
    await waitLive(page);
  }
  await card(bob, aid).locator('[data-action=approve]').click();
  await expect(card(alice, aid).getByTestId('card-approval')).toContainText('Approved by Bob Example');

  // Alice edits the command (through the same decision route as her card's Edit).
  const cookies = await alice.context().cookies();
  const session = cookies.find((c) => c.name === 'countersign_session')!;
  const edited = await fetch(`${server!.url}/api/v1/sessions/${sid}/approvals/${aid}`, {
    method: 'POST',
    headers: { cookie: `${session.name}=${session.value}`, 'sec-fetch-site': 'same-origin', 'content-type': 'application/json' },
    body: JSON.stringify({ decision: 'edit', edits: { command: 'make deploy-staging' } }),
  });
  expect(edited.status).toBe(202);

  // Bob sees the edit, and that only Alice's approval counts now.
  const bobs = card(bob, aid);
  await expect(bobs.getByTestId('card-route-edit')).toContainText('Edited by Alice Example');
  await expect(bobs.getByTestId('card-route-edit')).toContainText('make deploy-staging');
  await expect(bobs.getByTestId('card-approval')).toHaveCount(1);
  await expect(bobs.getByTestId('card-approval')).toContainText('Approved by Alice Example');

  // His approval of the card as edited resolves it as an edit.
  await bobs.locator('[data-action=approve]').click();
  await expect(bobs).toHaveAttribute('data-state', 'resolved');
  await expect(bobs.getByTestId('card-outcome')).toContainText('Approved (edited) by Alice Example (alice@example.test), and by Bob Example (bob@example.test)');
  for (const page of [alice, bob]) await page.context().close();
});
