// verify.mjs BUNDLE TRUSTED_ROOT PUBLISHER_PEM ARTIFACT
//
// Verifies a Sigstore bundle with sigstore-js's verify API (@sigstore/verify), the way a Sigstore user
// does: the trusted root and the signer's PEM public key as they are, the Verifier's default thresholds
// (one transparency-log entry, one timestamp), then the artifact's sha256 looked up among the in-toto
// statement's subjects. Exits 0 and prints "verified" only if all of it holds.
import { createHash, createPublicKey } from 'node:crypto';
import { readFileSync } from 'node:fs';

import { bundleFromJSON } from '@sigstore/bundle';
import { PublicKeyDetails, TrustedRoot } from '@sigstore/protobuf-specs';
import { Verifier, toSignedEntity, toTrustMaterial } from '@sigstore/verify';

const [bundlePath, rootPath, keyPath, artifactPath] = process.argv.slice(2);
if (!artifactPath) {
  console.error('usage: verify.mjs BUNDLE TRUSTED_ROOT PUBLISHER_PEM ARTIFACT');
  process.exit(2);
}

const bundle = bundleFromJSON(JSON.parse(readFileSync(bundlePath, 'utf8')));
const trustedRoot = TrustedRoot.fromJSON(JSON.parse(readFileSync(rootPath, 'utf8')));
const hint = bundle.verificationMaterial.content.publicKey?.hint;
const der = createPublicKey(readFileSync(keyPath)).export({ type: 'spki', format: 'der' });
const keys = { [hint]: { rawBytes: der, keyDetails: PublicKeyDetails.PKIX_ECDSA_P256_SHA_256 } };

const verifier = new Verifier(toTrustMaterial(trustedRoot, keys));
verifier.verify(toSignedEntity(bundle));

const statement = JSON.parse(bundle.content.dsseEnvelope.payload.toString('utf8'));
const digest = createHash('sha256').update(readFileSync(artifactPath)).digest('hex');
if (!statement.subject.some((s) => s.digest?.sha256 === digest)) {
  console.error(`no subject of the statement pins ${artifactPath} (sha256 ${digest})`);
  process.exit(1);
}
console.log(`verified: ${statement.predicateType}, ${statement.subject.length} subjects, ${artifactPath} pinned`);
