// Verifies a maka-eval-relay DSSE envelope with code we did not write: @sigstore/core's DSSE
// pre-authentication encoding and its crypto.verify (Node's own Ed25519), with the PEM public key.
//   node sigstore_verify.js NODE_MODULES_DIR PUB.pem ENVELOPE
// Exit 0 and "verified" when the signature holds; exit 1 and why not.
"use strict";
const [modules, keyPath, envelopePath] = process.argv.slice(2);
const fs = require("fs");
const path = require("path");
const core = require(path.join(modules, "@sigstore", "core"));

let envelope;
try {
  envelope = JSON.parse(fs.readFileSync(envelopePath, "utf8"));
} catch (error) {
  console.log(`not JSON: ${error.message}`);
  process.exit(1);
}
const key = core.crypto.createPublicKey(fs.readFileSync(keyPath, "utf8"));
const payload = Buffer.from(envelope.payload, "base64");
const pae = core.dsse.preAuthEncoding(envelope.payloadType, payload);
const signature = Buffer.from(envelope.signatures[0].sig, "base64");
if (!core.crypto.verify(pae, key, signature)) {
  console.log("the signature does not verify");
  process.exit(1);
}
const statement = JSON.parse(payload.toString("utf8"));
console.log(`verified ${statement._type} ${statement.predicateType} (${statement.subject.length} subjects)`);
