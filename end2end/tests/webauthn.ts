// Chromium's virtual WebAuthn authenticators (CDP `WebAuthn.*`) and what a test needs to read
// and make Countersign's passkey ceremonies independently of the server: the browser holds a
// random handle (`pk2.…`) and the server keeps the ceremony in its database under the handle's
// SHA-256 (table `hashed_secrets`, kind `ceremony`), which a test reads and writes as anyone
// who can open that database could; an assertion's challenge is SHA-256 over length-prefixed
// fields: for a card its id, its digest and the answer's fingerprint; for a change to passkeys
// that change.
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CDPSession, expect, Page } from '@playwright/test';
import { sha256hex, sqlite } from './database';

export interface VirtualCredential {
  credentialId: string;
  isResidentCredential: boolean;
  rpId?: string;
  privateKey: string;
  userHandle?: string;
  signCount: number;
}

/** One virtual authenticator attached to a page: a device holding passkeys. */
export class Authenticator {
  private constructor(readonly cdp: CDPSession, readonly id: string) {}

  /**
   * A user-verifying platform authenticator ("this device") that answers every prompt by
   * itself. `credentials`: passkeys it already holds (moved over from another one).
   */
  static async attach(page: Page, credentials: VirtualCredential[] = []): Promise<Authenticator> {
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('WebAuthn.enable', { enableUI: false });
    const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
      options: {
        protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true,
        isUserVerified: true, automaticPresenceSimulation: true,
      },
    });
    const auth = new Authenticator(cdp, authenticatorId);
    for (const c of credentials) {
      await cdp.send('WebAuthn.addCredential', { authenticatorId, credential: c as any });
    }
    return auth;
  }

  async credentials(): Promise<VirtualCredential[]> {
    const { credentials } = await this.cdp.send('WebAuthn.getCredentials', { authenticatorId: this.id });
    return credentials as VirtualCredential[];
  }

  /** The person present but not verified (no PIN, no biometrics) from now on. */
  async setUserVerified(verified: boolean) {
    await this.cdp.send('WebAuthn.setUserVerified', { authenticatorId: this.id, isUserVerified: verified });
  }

  /** Takes the device away: its passkeys can no longer answer here. */
  async detach() {
    await this.cdp.send('WebAuthn.removeVirtualAuthenticator', { authenticatorId: this.id });
    await this.cdp.detach();
  }
}

export const b64url = (b: Buffer | string) => Buffer.from(b).toString('base64url');
export const unb64url = (s: string) => Buffer.from(s, 'base64url');

/** What the server keeps for a ceremony, found by its handle's hash (the handle is kept nowhere). */
export function openCeremony(dataDir: string, handle: string): any {
  if (!/^pk2\.[A-Za-z0-9_-]{43}$/.test(handle)) throw new Error(`not a ceremony handle: ${handle.slice(0, 40)}…`);
  const rows = sqlite(dataDir, "SELECT body FROM hashed_secrets WHERE kind = 'ceremony' AND hash = ?", [sha256hex(handle)]);
  if (rows.length !== 1) throw new Error(`no kept ceremony for ${handle.slice(0, 12)}…`);
  expect(rows[0][0]).not.toContain(handle.slice(4));
  return JSON.parse(rows[0][0]);
}

/**
 * Writes `value` into the server's database as a new ceremony and returns its handle: what
 * someone who can write that database could do (the checks behind a ceremony must still
 * hold: the challenge is derived from what it claims, and the authenticator signed another).
 */
export function keepCeremony(dataDir: string, value: any): string {
  const handle = `pk2.${randomBytes(32).toString('base64url')}`;
  sqlite(dataDir, "INSERT INTO hashed_secrets (hash, kind, body, created_ms, expires_ms) VALUES (?, 'ceremony', ?, ?, ?)",
    [sha256hex(handle), JSON.stringify(value), Date.now(), value.expires_ms]);
  return handle;
}

/**
 * A ceremony sealed the way an older build sealed them, from what its data dir holds: an HMAC
 * keyed from a hash of `vapid_private_key`. Reading the data dir must not make a ceremony.
 */
export function sealedFromTheDataDir(dataDir: string, value: unknown): string {
  const key = readFileSync(join(dataDir, 'vapid_private_key'));
  const root = createHash('sha256').update(Buffer.from('countersign-seal-root\0')).update(key).digest('hex');
  const body = b64url(JSON.stringify(value));
  const tag = createHmac('sha256', `countersign-seal:passkey-ceremony:${root}`).update(body).digest('base64url');
  return `pk1.${body}.${tag}`;
}

/** An answer as the card sends it with its assertion (the decision body less digest and reason). */
export interface AnswerShape {
  decision: string;
  edits?: unknown;
  rule?: { scope?: string; pattern?: string; expires_in_secs?: number };
  execution_mode?: string;
}

/** serde_json's compact text of `value` with every object's keys sorted. */
function canonicalJson(value: unknown): string {
  const sorted = (v: any): any => {
    if (Array.isArray(v)) return v.map(sorted);
    if (v && typeof v === 'object') {
      const out: any = {};
      for (const k of Object.keys(v).sort()) out[k] = sorted(v[k]);
      return out;
    }
    return v;
  };
  return JSON.stringify(sorted(value));
}

/**
 * The fingerprint an assertion for a card is made for: hex SHA-256 of the canonical JSON of the
 * answer's decision, edits, rule (scope, pattern, expiry) and plan mode.
 */
export function answerFingerprint(answer: AnswerShape): string {
  const shape = {
    decision: answer.decision,
    edits: answer.edits ?? null,
    rule: answer.rule ? {
      scope: answer.rule.scope ?? 'session', pattern: answer.rule.pattern ?? null,
      expires_in_secs: answer.rule.expires_in_secs ?? null,
    } : null,
    execution_mode: answer.execution_mode ?? null,
  };
  return createHash('sha256').update(canonicalJson(shape)).digest('hex');
}

/** A change to passkeys, as `POST /api/v1/passkeys/assertions` takes it. */
export type PasskeyChange = { change: 'add'; name: string } | { change: 'remove'; id: string };

/**
 * The challenge of an assertion for one answer to a card (`approval_id`, `digest`, `answer`)
 * or for one change to passkeys.
 */
export function challengeFor(
  purpose: { approval_id: string; digest: string; answer: AnswerShape } | PasskeyChange, nonce: string,
): string {
  const hash = createHash('sha256');
  const field = (s: string) => {
    const bytes = Buffer.from(s, 'utf8');
    const len = Buffer.alloc(8);
    len.writeBigUInt64BE(BigInt(bytes.length));
    hash.update(len);
    hash.update(bytes);
  };
  field('countersign-step-up');
  if ('change' in purpose) {
    field('manage');
    field(purpose.change === 'add' ? `add:${purpose.name.trim()}` : `remove:${purpose.id}`);
  } else {
    field('gate');
    field(purpose.approval_id);
    field(purpose.digest);
    field(answerFingerprint(purpose.answer));
  }
  field(nonce);
  return hash.digest('base64url');
}

/** The client data an assertion or registration signed over. */
export function clientData(credential: any): { type: string; challenge: string; origin: string } {
  return JSON.parse(unb64url(credential.response.clientDataJSON).toString('utf8'));
}

/** An assertion as the page makes it: `{ceremony, credential}`. */
export interface Assertion {
  ceremony: string;
  credential: any;
}

/**
 * An assertion for one answer to a card, made by the page's own script
 * (`window.countersignPasskey(sid, aid, answerJson)`).
 */
export async function assertionForCard(page: Page, sid: string, aid: string,
  answer: AnswerShape = { decision: 'approve' }): Promise<Assertion> {
  const text = await page.evaluate(([s, a, json]) => (window as any).countersignPasskey(s, a, json) as Promise<string>,
    [sid, aid, JSON.stringify(answer)]);
  return JSON.parse(text);
}

/** An assertion for one change to passkeys (`countersignPasskeys.manage(change)`). */
export async function assertionToManage(page: Page, change: PasskeyChange): Promise<Assertion> {
  return page.evaluate((c) => (window as any).countersignPasskeys.manage(c) as Promise<Assertion>, change);
}

/**
 * A new credential made in the page by its authenticator for registration `options` as the
 * server gave them (`POST /api/v1/passkeys/registrations`), as JSON the server takes: what a
 * client other than the Security page's script would send.
 */
export async function createCredential(page: Page, options: any): Promise<any> {
  return page.evaluate(async (options: any) => {
    const bytes = (s: string) => Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));
    const text = (b: ArrayBuffer) => btoa(String.fromCharCode(...new Uint8Array(b))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
    // WebIDL takes no null for its enums and dictionaries: drop them, as the page's script does.
    const clean = (v: any): any => Array.isArray(v) ? v.map(clean) : v && typeof v === 'object'
      ? Object.fromEntries(Object.entries(v).filter(([, x]) => x !== null && x !== undefined).map(([k, x]) => [k, clean(x)]))
      : v;
    const pk = clean(options.publicKey);
    const cred: any = await navigator.credentials.create({ publicKey: {
      ...pk, challenge: bytes(pk.challenge), user: { ...pk.user, id: bytes(pk.user.id) },
      excludeCredentials: (pk.excludeCredentials || []).map((c: any) => ({ ...c, id: bytes(c.id) })),
    } });
    return { id: cred.id, rawId: text(cred.rawId), type: cred.type, extensions: {}, response: {
      attestationObject: text(cred.response.attestationObject), clientDataJSON: text(cred.response.clientDataJSON),
    } };
  }, options);
}
