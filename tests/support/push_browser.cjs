// The browser's and the push service's side of Web Push, for tests, written independently of the
// server's code: keys made and pushes decrypted by npm's `http_ece` (RFC 8188/8291, Mozilla's
// Martin Thomson, in package.json) on Node's own crypto, and the VAPID token (RFC 8292) checked
// with Node's crypto as a push service checks it.
//
//   node push_browser.cjs keys
//     -> {"private_key", "p256dh", "auth"}: a browser's subscription keys (base64url)
//   node push_browser.cjs receive < {"private_key", "auth", "endpoint", "authorization",
//                                     "server_key", "content_encoding", "ttl", "body"}
//     -> {"payload", "claims"}, or a message on stderr and exit status 1 when the push is not one
//        a browser vendor would take (bad token, wrong audience, expired, undecryptable)
'use strict';

const crypto = require('crypto');
const fs = require('fs');

let ece;
try {
  ece = require('http_ece');
} catch (error) {
  process.stderr.write('npm http_ece is missing: run `npm ci` (scripts/setup.sh installs it)\n');
  process.exit(3);
}

function fail(why) {
  process.stderr.write(why + '\n');
  process.exit(1);
}

function fromB64url(text) {
  return Buffer.from(text, 'base64url');
}

function keys() {
  const ecdh = crypto.createECDH('prime256v1');
  ecdh.generateKeys();
  return {
    private_key: ecdh.getPrivateKey().toString('base64url'),
    p256dh: ecdh.getPublicKey().toString('base64url'),
    auth: crypto.randomBytes(16).toString('base64url'),
  };
}

// RFC 8292 §3: `vapid t=<JWT>, k=<public key>`, the JWT ES256, its audience the push resource's
// origin, its expiry within 24 hours, its subject a contact address.
function checkVapid(authorization, endpoint, serverKey) {
  const match = /^vapid t=([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+), k=([A-Za-z0-9_-]+)$/.exec(authorization || '');
  if (!match) fail(`Authorization is not "vapid t=…, k=…": ${authorization}`);
  const [, token, k] = match;
  if (serverKey && k !== serverKey) fail('k= is not the key the browser subscribed with');
  const point = fromB64url(k);
  if (point.length !== 65 || point[0] !== 4) fail('k= is not an uncompressed P-256 point');
  const publicKey = crypto.createPublicKey({
    key: { kty: 'EC', crv: 'P-256', x: point.subarray(1, 33).toString('base64url'), y: point.subarray(33).toString('base64url') },
    format: 'jwk',
  });
  const [header, claims, signature] = token.split('.');
  const head = JSON.parse(fromB64url(header).toString('utf8'));
  if (head.alg !== 'ES256') fail(`the token's alg is ${head.alg}, not ES256`);
  const signed = Buffer.from(`${header}.${claims}`);
  const valid = crypto.verify('sha256', signed, { key: publicKey, dsaEncoding: 'ieee-p1363' }, fromB64url(signature));
  if (!valid) fail("the token's signature does not verify with k=");
  const body = JSON.parse(fromB64url(claims).toString('utf8'));
  const origin = new URL(endpoint).origin;
  if (body.aud !== origin) fail(`aud is ${body.aud}, not the endpoint's origin ${origin}`);
  const now = Math.floor(Date.now() / 1000);
  if (!Number.isInteger(body.exp) || body.exp <= now) fail(`the token expired (exp ${body.exp}, now ${now})`);
  if (body.exp > now + 24 * 3600) fail(`exp is more than 24 hours away (exp ${body.exp}, now ${now})`);
  if (!/^(mailto:|https:)/.test(body.sub || '')) fail(`sub is not a mailto: or https: address: ${body.sub}`);
  return body;
}

function receive(input) {
  if (input.content_encoding !== 'aes128gcm') fail(`Content-Encoding is ${input.content_encoding}, not aes128gcm`);
  if (!/^[0-9]+$/.test(input.ttl || '')) fail(`TTL is not a number of seconds: ${input.ttl}`);
  const claims = checkVapid(input.authorization, input.endpoint, input.server_key);
  const browser = crypto.createECDH('prime256v1');
  browser.setPrivateKey(fromB64url(input.private_key));
  let plaintext;
  try {
    plaintext = ece.decrypt(Buffer.from(input.body, 'base64'), {
      version: 'aes128gcm',
      privateKey: browser,
      authSecret: input.auth,
    });
  } catch (error) {
    fail(`the payload does not decrypt: ${error.message}`);
  }
  let payload;
  try {
    payload = JSON.parse(plaintext.toString('utf8'));
  } catch (error) {
    fail(`the payload is not JSON: ${plaintext.toString('utf8')}`);
  }
  return { payload, claims };
}

const command = process.argv[2];
if (command === 'keys') {
  process.stdout.write(JSON.stringify(keys()));
} else if (command === 'receive') {
  process.stdout.write(JSON.stringify(receive(JSON.parse(fs.readFileSync(0, 'utf8')))));
} else {
  fail('usage: push_browser.cjs keys | receive');
}
