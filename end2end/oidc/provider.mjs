// A real OpenID Connect provider for the tests (npm `oidc-provider`, a certified
// implementation), on a free loopback port. Installed by `ensure_oidc_provider`
// (scripts/lib.sh) under target/oidc-provider; run as
//   node end2end/oidc/provider.mjs --client-id ID --client-secret SECRET --redirect-uri URI
// It prints one JSON line, {"issuer": "http://127.0.0.1:<port>"}, once it listens, and serves
// until killed. Its accounts (the login form takes the account id, any password):
//   alice  alice@example.test  verified    bob   bob@example.test  verified
//   carol  carol@other.test    verified    eve   eve@example.test  NOT verified
//   kelvin  \u212Aate@example.test (KELVIN SIGN, not a K)  verified
//   mallory alice@example.test  NOT verified (claims someone else's address)
//   spoofer 'alice@example.test via token:phone@example.test'  verified (no address: spaces)
//   dave   dave@example.test   verified, display name 'bob@example.test'
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, arg, i, all) => {
    if (arg.startsWith('--')) pairs.push([arg.slice(2), all[i + 1]]);
    return pairs;
  }, []),
);
for (const key of ['client-id', 'client-secret', 'redirect-uri']) {
  if (!args[key]) {
    console.error(`usage: provider.mjs --client-id ID --client-secret SECRET --redirect-uri URI (missing --${key})`);
    process.exit(2);
  }
}

// Where `ensure_oidc_provider` installed the package (or $COUNTERSIGN_OIDC_PROVIDER_DIR).
const root = process.env.COUNTERSIGN_OIDC_PROVIDER_DIR
  || path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../target/oidc-provider');
const require = createRequire(path.join(root, 'package.json'));
const { default: Provider } = await import(pathToFileURL(require.resolve('oidc-provider')).href);

const accounts = {
  alice: { email: 'alice@example.test', email_verified: true, name: 'Alice Example' },
  bob: { email: 'bob@example.test', email_verified: true, name: 'Bob Example' },
  carol: { email: 'carol@other.test', email_verified: true, name: 'Carol Other' },
  eve: { email: 'eve@example.test', email_verified: false, name: 'Eve Unverified' },
  kelvin: { email: '\u212Aate@example.test', email_verified: true, name: 'Kelvin Lookalike' },
  mallory: { email: 'alice@example.test', email_verified: false, name: 'Mallory Claims' },
  spoofer: { email: 'alice@example.test via token:phone@example.test', email_verified: true, name: 'Spoofer' },
  // A maintainer whose display name is another person's address (red-team, tests/rtpage.rs).
  dave: { email: 'dave@example.test', email_verified: true, name: 'bob@example.test' },
};

const server = http.createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  clients: [{
    client_id: args['client-id'],
    client_secret: args['client-secret'],
    redirect_uris: [args['redirect-uri']],
    grant_types: ['authorization_code'],
    response_types: ['code'],
  }],
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
  // Every claim the scopes ask for goes in the ID token (no userinfo call needed).
  conformIdTokenClaims: false,
  features: { devInteractions: { enabled: true } },
  pkce: { required: () => true },
  async findAccount(ctx, id) {
    const account = accounts[id];
    if (!account) return undefined;
    return { accountId: id, claims: async () => ({ sub: id, ...account }) };
  },
  // Consent is granted for this one client at once: the tests sign in, they do not consent.
  async loadExistingGrant(ctx) {
    const grant = new ctx.oidc.provider.Grant({
      clientId: ctx.oidc.client.clientId,
      accountId: ctx.oidc.session.accountId,
    });
    grant.addOIDCScope('openid email profile');
    await grant.save();
    return grant;
  },
});
provider.proxy = false;
server.on('request', provider.callback());
console.log(JSON.stringify({ issuer }));
// Only that line goes to stdout: whoever started us may stop reading it (the provider's own
// notices go to stderr).
console.log = console.error;
console.info = console.error;
