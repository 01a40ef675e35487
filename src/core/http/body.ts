/**
 * Reads a request body once, enforcing --max-payload-size before and while reading, and holding
 * its bytes against the router-wide budget (body-budget.ts) while it is kept.
 */
import { RouterError } from '../contracts/errors.ts';
import type { HeaderLookup } from '../routing/routing-input.ts';
import { concatChunks } from '../upstream/body.ts';
import { type BodyBudget, budgetExceeded, type Reservation } from './body-budget.ts';
import type { Inbound } from './inbound.ts';

/** The 400 for a body its client broke off while sending it (nobody may be left to read why). */
export function bodyBrokeOff(cause?: unknown): RouterError {
  return new RouterError(
    'invalid_request',
    'the request body broke off while it was being sent',
    cause === undefined ? {} : { cause },
  );
}

/** The 413 for a body over --max-payload-size. */
export function tooLarge(limit: number): RouterError {
  return new RouterError(
    'payload_too_large',
    `request body exceeds the maximum payload size of ${limit} bytes`,
  );
}

export interface BufferedBody {
  bytes: Uint8Array;
  /** The bytes held against the budget: release once the request is finished. */
  reservation: Reservation;
}

/**
 * Buffers the body. A declared length is checked and reserved before reading; a chunked body
 * grows its reservation as it arrives. Throws the RouterError to answer with (413, 503), the
 * reservation already returned.
 */
export async function readBody(inbound: Inbound, limit: number, budget: BodyBudget): Promise<BufferedBody> {
  const declared = inbound.header('content-length');
  if (declared !== undefined) {
    const n = Number(declared);
    if (Number.isFinite(n) && n > limit) throw tooLarge(limit);
    const reservation = budget.reserve(Number.isFinite(n) && n > 0 ? n : 0);
    if (!reservation) throw budgetExceeded(budget, n);
    try {
      // Within the limit as declared: the host's fast buffered read (it enforces the length).
      return { bytes: await inbound.bytes(), reservation };
    } catch (err) {
      reservation.release();
      throw err;
    }
  }
  const reservation = budget.reserve(0);
  if (!reservation) throw budgetExceeded(budget, undefined);
  try {
    return { bytes: await readChunks(inbound, limit, reservation, budget), reservation };
  } catch (err) {
    reservation.release();
    throw err;
  }
}

async function readChunks(
  inbound: Inbound,
  limit: number,
  reservation: Reservation,
  budget: BodyBudget,
): Promise<Uint8Array> {
  const stream = inbound.stream();
  if (!stream) return new Uint8Array(0);
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    let read: ReadableStreamReadResult<Uint8Array>;
    try {
      read = await reader.read();
    } catch (err) {
      throw bodyBrokeOff(err);
    }
    const { done, value } = read;
    if (done) break;
    size += value.byteLength;
    let error: RouterError | undefined;
    if (size > limit) error = tooLarge(limit);
    else if (!reservation.grow(value.byteLength)) error = budgetExceeded(budget, undefined);
    if (error) {
      await reader.cancel().catch(() => {});
      throw error;
    }
    chunks.push(value);
  }
  return concatChunks(chunks, size);
}

/** True when the body announces more than `maxBuffered` bytes, or gives no length at all. */
export function tooLargeToBuffer(header: HeaderLookup, maxBuffered: number): boolean {
  const declared = header('content-length');
  if (declared === undefined) return header('transfer-encoding') !== undefined;
  return Number(declared) > maxBuffered;
}
