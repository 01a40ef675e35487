/**
 * The request id: the first configured header the client sent with an acceptable value, else a
 * fresh one from the injected id source. An id longer than MAX_REQUEST_ID_BYTES, or with anything
 * but visible ASCII (no spaces, control characters or non-ASCII), is never echoed nor forwarded.
 */

export const MAX_REQUEST_ID_BYTES = 256;

/** At most MAX_REQUEST_ID_BYTES characters, each in 0x21..0x7e (visible ASCII: one byte each). */
export function isAcceptableRequestId(value: string): boolean {
  if (value.length === 0 || value.length > MAX_REQUEST_ID_BYTES) return false;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x21 || c > 0x7e) return false;
  }
  return true;
}

/** `header` reads one request header by its lower-case name. */
export function requestIdOf(
  header: (name: string) => string | undefined,
  headerNames: readonly string[],
  newId: () => string,
): string {
  for (const name of headerNames) {
    const value = header(name);
    if (value && isAcceptableRequestId(value)) return value;
  }
  return newId();
}
