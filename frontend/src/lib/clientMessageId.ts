type RandomSource = Pick<Crypto, "getRandomValues"> & Partial<Pick<Crypto, "randomUUID">>;

/**
 * A fresh id for one chat turn, sent as `clientMessageId`. graphql-ws sends the same `subscribe`
 * (variables and all) again after a reconnect, so the server recognises the turn and lets the
 * client follow it instead of answering the question a second time.
 */
export function newClientMessageId(source: RandomSource = crypto): string {
  // randomUUID exists only in secure contexts (https, localhost); plain http on a LAN address has only getRandomValues.
  if (typeof source.randomUUID === "function") return source.randomUUID();
  const bytes = source.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6]! & 0x0f) | 0x40; // version 4
  bytes[8] = (bytes[8]! & 0x3f) | 0x80; // RFC 4122 variant
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
