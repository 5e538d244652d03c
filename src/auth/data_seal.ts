// Sealed values: what the service hands out to be sent back as it is (the Data-Token of a read,
// the change feed's cursors) is encrypted and authenticated (AES-256-GCM) with a key derived from
// the service's secret, so that a client learns nothing from it (a commit number would tell a key
// limited to some stores how many commits other stores had) and cannot make or alter one.
// Sealing is deterministic (the nonce is an HMAC of the text, as in SIV): the same data always
// gives the same token, so an answer and its 304 agree.
import { createCipheriv, createDecipheriv, createHmac, hkdfSync } from "node:crypto";
import { Buffer } from "node:buffer";
import { Effect } from "effect";
import { Auth } from "./auth_service.ts";
import { span } from "../ops/span.ts";

// What a sealed value is for: a value sealed for one purpose does not open for another.
export type SealPurpose = "data-token" | "change-cursor" | "version";

export interface SealKeys {
  readonly cipher: Buffer;
  readonly nonce: Buffer;
}

const NONCE_BYTES = 12;
const TAG_BYTES = 16;

const derive = (secret: string, info: string) =>
  Buffer.from(hkdfSync("sha256", secret, "energy-service/seal", info, 32));

// The keys of a service secret: one to encrypt, one to make the nonces.
export const sealKeysOf = (secret: string): SealKeys => ({
  cipher: derive(secret, "aes-256-gcm"),
  nonce: derive(secret, "nonce"),
});

export const sealWith = (keys: SealKeys, purpose: SealPurpose, text: string) => {
  const plain = Buffer.from(text, "utf8");
  const nonce = createHmac("sha256", keys.nonce).update(purpose).update("\0").update(plain)
    .digest().subarray(0, NONCE_BYTES);
  const cipher = createCipheriv("aes-256-gcm", keys.cipher, nonce);
  cipher.setAAD(Buffer.from(purpose));
  const body = Buffer.concat([cipher.update(plain), cipher.final()]);
  return Buffer.concat([nonce, body, cipher.getAuthTag()]).toString("base64url");
};

// The text of a value sealed with these keys for this purpose; undefined for anything else.
export const openWith = (keys: SealKeys, purpose: SealPurpose, sealed: string) => {
  const bytes = Buffer.from(sealed, "base64url");
  if (bytes.length < NONCE_BYTES + TAG_BYTES || bytes.toString("base64url") !== sealed) {
    return undefined;
  }
  try {
    const decipher = createDecipheriv(
      "aes-256-gcm",
      keys.cipher,
      bytes.subarray(0, NONCE_BYTES),
    );
    decipher.setAAD(Buffer.from(purpose));
    decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
    const plain = Buffer.concat([
      decipher.update(bytes.subarray(NONCE_BYTES, bytes.length - TAG_BYTES)),
      decipher.final(),
    ]);
    return plain.toString("utf8");
  } catch {
    return undefined;
  }
};

// Few distinct values are sealed at a time (a data token changes only at a commit): the last ones
// are kept, so that a read seals nothing anew.
const KEPT = 512;

export class DataSeal extends Effect.Service<DataSeal>()("Auth/DataSeal", {
  effect: Effect.gen(function* () {
    const auth = yield* Auth;
    let keys: SealKeys | undefined;
    const kept = new Map<string, string>();

    // The keys once the secret is known; a failed read of it is tried again next time.
    const keysOf = Effect.suspend(() =>
      keys !== undefined
        ? Effect.succeed(keys)
        : Effect.map(auth.secret, (secret) => (keys ??= sealKeysOf(secret)))
    );

    const sealKnown = (known: SealKeys, purpose: SealPurpose, text: string) => {
      const key = `${purpose}|${text}`;
      let sealed = kept.get(key);
      if (sealed === undefined) {
        if (kept.size >= KEPT) kept.clear();
        sealed = sealWith(known, purpose, text);
        kept.set(key, sealed);
      }
      return sealed;
    };

    const seal = (purpose: SealPurpose, text: string) =>
      Effect.map(keysOf, (known) => sealKnown(known, purpose, text)).pipe(span("DataSeal.seal"));

    const open = (purpose: SealPurpose, sealed: string) =>
      Effect.map(keysOf, (known) => openWith(known, purpose, sealed)).pipe(span("DataSeal.open"));

    // A read's Data-Token from the token its statement gave (none: none).
    const dataToken = (token: string | undefined) =>
      token === undefined ? Effect.succeed(undefined) : seal("data-token", token);

    return { seal, open, dataToken } as const;
  }),
  dependencies: [Auth.Default],
}) {}
