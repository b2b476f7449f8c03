// A push service on loopback, written independently of the server (Node's OpenSSL through
// node:crypto): it hands out a subscription as a browser would (a P-256 key pair and a 16-byte
// auth secret), takes the server's pushes, checks each one's VAPID JWT (RFC 8292) and
// decrypts its body (RFC 8291, aes128gcm of RFC 8188), and answers with the status a test
// asks for (201, or 410 for a subscription the browser dropped). And the answer capabilities
// as the server keeps them: only by hash, with their grant, in its database.
import { createServer, IncomingMessage, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  createDecipheriv, createECDH, createHash, createHmac, createPublicKey, ECDH, hkdfSync, randomBytes, verify,
} from 'node:crypto';
import { expect } from '@playwright/test';
import { sha256hex, sqlite } from './database';

export const b64url = (buf: Buffer | Uint8Array) => Buffer.from(buf).toString('base64url');
export const unb64url = (text: string) => Buffer.from(text, 'base64url');

/** What an answer capability grants: the JSON the server keeps under the capability's hash. */
export interface Grant {
  /** Session id. */
  s: string;
  /** Approval id. */
  a: string;
  /** The card's digest. */
  d: string;
  /** The holder: `{k: 'subscription', v: <subscription id>}`. */
  h: { k: string; v: string };
  /** The gate's deadline, Unix ms. */
  e: number;
}

/** How every capability the server hands out looks: a random secret, 32 bytes in base64url. */
export const CAPABILITY = /^cs2\.[A-Za-z0-9_-]{43}$/;

/**
 * The grant the server keeps for `capability`, found by the capability's SHA-256 (table
 * `hashed_secrets`, kind `capability`); the capability itself is kept nowhere.
 */
export function grantOf(dataDir: string, capability: string): Grant {
  expect(capability).toMatch(CAPABILITY);
  const rows = sqlite(dataDir, "SELECT body FROM hashed_secrets WHERE kind = 'capability' AND hash = ?", [sha256hex(capability)]);
  expect(rows, `a kept grant for ${capability.slice(0, 12)}…`).toHaveLength(1);
  expect(rows[0][0]).not.toContain(capability.slice(4));
  return JSON.parse(rows[0][0]);
}

/**
 * A capability for `grant`, made by writing its hash and the grant into the server's database
 * (what anyone who can write that database could do), kept as the server keeps one (until a
 * day past the card's deadline). Tests use it only to reach the checks no pushed capability
 * reaches (a card the server would never make one for, another digest).
 */
export function keepCapability(dataDir: string, grant: Grant): string {
  const capability = `cs2.${randomBytes(32).toString('base64url')}`;
  sqlite(dataDir, "INSERT INTO hashed_secrets (hash, kind, body, created_ms, expires_ms) VALUES (?, 'capability', ?, ?, ?)",
    [sha256hex(capability), JSON.stringify(grant), Date.now(), grant.e + 24 * 3600_000]);
  return capability;
}

/**
 * The format capabilities had before they were random secrets:
 * `cs1.<base64url(JSON)>.<base64url(HMAC-SHA-256)>`, the MAC over the body text under
 * `countersign-seal:answer-capability:<secret>`. No longer taken, whatever the secret.
 */
export function sealCapability(secret: string, grant: Grant): string {
  const body = b64url(Buffer.from(JSON.stringify(grant)));
  const tag = createHmac('sha256', `countersign-seal:answer-capability:${secret}`).update(body).digest('base64url');
  return `cs1.${body}.${tag}`;
}

/**
 * A capability sealed as an older build sealed them, from what its data dir holds: under the
 * root derived from the VAPID key file (hex(SHA-256("countersign-seal-root\0" || key))). The
 * attack of issue 37: an agent that reads the data dir must not be able to answer with it.
 */
export function sealedFromTheDataDir(dataDir: string, grant: Grant): string {
  const key = readFileSync(join(dataDir, 'vapid_private_key'));
  const root = createHash('sha256').update(Buffer.from('countersign-seal-root\0')).update(key).digest('hex');
  return sealCapability(root, grant);
}

/** JSON with object keys sorted at every level (what the server hashes for a card's digest). */
export function canonicalJson(value: unknown): string {
  const sorted = (v: any): any => {
    if (Array.isArray(v)) return v.map(sorted);
    if (v && typeof v === 'object') {
      return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sorted(v[k])]));
    }
    return v;
  };
  return JSON.stringify(sorted(value));
}

/**
 * A tool card's digest, made here as the server makes it: hex SHA-256 of canonical
 * `{tool, args}`, or `{tool, args, bound}` for a call bound to what its card was made from
 * (a shell call: `cwd:<the folder it runs in>`).
 */
export function callDigest(tool: string, args: object, bound?: string): string {
  const value = bound === undefined ? { tool, args } : { tool, args, bound };
  return createHash('sha256').update(canonicalJson(value)).digest('hex');
}

/** One browser subscription the fake service stands behind. */
export interface FakeSubscription {
  id: string;
  endpoint: string;
  ecdh: ECDH;
  auth: Buffer;
  /** What `PushSubscription.toJSON()` gives and the page posts. */
  json: { endpoint: string; expirationTime: null; keys: { p256dh: string; auth: string } };
  /** The status the next pushes to it get (201 by default). */
  status: number;
}

/** One push as received, with what the checks found. */
export interface ReceivedPush {
  subscription: string;
  status: number;
  headers: IncomingMessage['headers'];
  raw: Buffer;
  /** The VAPID check: the JWT's claims and `k`, or why it failed. */
  vapid: { ok: boolean; error?: string; k?: string; claims?: any; header?: any };
  /** The decrypted JSON (or the error that stopped decryption). */
  message?: any;
  decryptError?: string;
}

/** RFC 8291 decryption of one aes128gcm push body for the subscription's keys. */
export function decryptPush(body: Buffer, ecdh: ECDH, auth: Buffer): Buffer {
  if (body.length < 21) throw new Error(`body too short: ${body.length}`);
  const salt = body.subarray(0, 16);
  const rs = body.readUInt32BE(16);
  const idlen = body[20];
  if (idlen !== 65) throw new Error(`key id length ${idlen}, not 65`);
  const asPublic = body.subarray(21, 21 + idlen);
  const ciphertext = body.subarray(21 + idlen);
  if (ciphertext.length > rs) throw new Error(`one record expected, ${ciphertext.length} > rs ${rs}`);
  const uaPublic = ecdh.getPublicKey();
  const ecdhSecret = ecdh.computeSecret(asPublic);
  const info = Buffer.concat([Buffer.from('WebPush: info\0'), uaPublic, asPublic]);
  const ikm = Buffer.from(hkdfSync('sha256', ecdhSecret, auth, info, 32));
  const cek = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: aes128gcm\0'), 16));
  const nonce = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: nonce\0'), 12));
  const tag = ciphertext.subarray(ciphertext.length - 16);
  const decipher = createDecipheriv('aes-128-gcm', cek, nonce);
  decipher.setAuthTag(tag);
  const padded = Buffer.concat([decipher.update(ciphertext.subarray(0, ciphertext.length - 16)), decipher.final()]);
  // Padding: the text, then the delimiter (0x02 on the last record), then zeros.
  let end = padded.length - 1;
  while (end >= 0 && padded[end] === 0) end--;
  if (end < 0 || padded[end] !== 0x02) throw new Error(`bad padding delimiter ${padded[end]}`);
  return padded.subarray(0, end);
}

/** RFC 8292: `vapid t=<JWT>, k=<public key>`; the JWT signed ES256 by k, for `audience`. */
export function checkVapid(authorization: string | undefined, audience: string): ReceivedPush['vapid'] {
  try {
    if (!authorization) throw new Error('no Authorization header');
    const m = authorization.match(/^vapid t=([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+),\s*k=([A-Za-z0-9_-]+)$/);
    if (!m) throw new Error(`not a vapid Authorization: ${authorization}`);
    const [, jwt, k] = m;
    const [h, c, s] = jwt.split('.');
    const header = JSON.parse(unb64url(h).toString());
    const claims = JSON.parse(unb64url(c).toString());
    if (header.alg !== 'ES256') throw new Error(`alg ${header.alg}`);
    const point = unb64url(k);
    if (point.length !== 65 || point[0] !== 4) throw new Error('k is not an uncompressed P-256 point');
    const key = createPublicKey({
      key: { kty: 'EC', crv: 'P-256', x: b64url(point.subarray(1, 33)), y: b64url(point.subarray(33)) },
      format: 'jwk',
    });
    const signature = unb64url(s);
    if (signature.length !== 64) throw new Error(`signature is ${signature.length} bytes, not 64`);
    const good = verify('sha256', Buffer.from(`${h}.${c}`), { key, dsaEncoding: 'ieee-p1363' }, signature);
    if (!good) throw new Error('the JWT signature does not verify with k');
    if (claims.aud !== audience) throw new Error(`aud ${claims.aud}, not ${audience}`);
    const now = Date.now() / 1000;
    if (!(claims.exp > now && claims.exp <= now + 24 * 3600 + 60)) throw new Error(`exp ${claims.exp} out of range`);
    if (typeof claims.sub !== 'string' || !/^(mailto:|https:)/.test(claims.sub)) throw new Error(`sub ${claims.sub}`);
    return { ok: true, k, claims, header };
  } catch (err) {
    return { ok: false, error: String((err as Error).message || err) };
  }
}

export class FakePushService {
  private server: Server;
  origin = '';
  readonly subscriptions = new Map<string, FakeSubscription>();
  readonly received: ReceivedPush[] = [];
  private next = 0;

  constructor() {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const raw = Buffer.concat(chunks);
        const id = decodeURIComponent((req.url || '').replace(/^\/push\//, ''));
        const sub = this.subscriptions.get(id);
        const status = req.method !== 'POST' ? 405 : sub ? sub.status : 404;
        const push: ReceivedPush = {
          subscription: id, status, headers: req.headers, raw,
          vapid: checkVapid(req.headers.authorization, this.origin),
        };
        if (sub) {
          try {
            push.message = JSON.parse(decryptPush(raw, sub.ecdh, sub.auth).toString('utf8'));
          } catch (err) {
            push.decryptError = String((err as Error).message || err);
          }
        }
        this.received.push(push);
        res.writeHead(status, status === 201 ? { Location: `${this.origin}/message/${this.received.length}` } : {});
        res.end();
      });
    });
  }

  async start(): Promise<void> {
    await new Promise<void>((ok) => this.server.listen(0, '127.0.0.1', ok));
    const { port } = this.server.address() as AddressInfo;
    this.origin = `http://127.0.0.1:${port}`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections?.();
    await new Promise<void>((ok) => this.server.close(() => ok()));
  }

  /** A new subscription, as a browser's push service would make one. */
  subscribe(): FakeSubscription {
    const ecdh = createECDH('prime256v1');
    ecdh.generateKeys();
    const auth = randomBytes(16);
    const id = `sub-${++this.next}-${randomBytes(6).toString('hex')}`;
    const endpoint = `${this.origin}/push/${id}`;
    const sub: FakeSubscription = {
      id, endpoint, ecdh, auth, status: 201,
      json: { endpoint, expirationTime: null, keys: { p256dh: b64url(ecdh.getPublicKey()), auth: b64url(auth) } },
    };
    this.subscriptions.set(id, sub);
    return sub;
  }

  /** The pushes received whose decrypted message matches `pred`. */
  messages(pred: (msg: any) => boolean = () => true): ReceivedPush[] {
    return this.received.filter((p) => p.message && pred(p.message));
  }
}
