/**
 * The events stream's entries and ids: one entry per `publish`, fields `from` (the replica) and
 * `events` (a JSON array of SharedEvent), ids `<ms>-<seq>` as Redis generates them.
 */
import type { SharedEvent, SharedEventBatch } from '../../core/contracts/shared-store.ts';
import type { RedisClient } from './redis-connection.ts';

/** Entries kept in the stream (approximately: `XADD … MAXLEN ~`). */
export const STREAM_MAX_LENGTH = 10_000;

export const ZERO_ID = '0-0';

export interface StreamEntry {
  id: string;
  message: Record<string, string>;
}

export function encodeBatch(replicaId: string, events: readonly SharedEvent[]): Record<string, string> {
  return { from: replicaId, events: JSON.stringify(events) };
}

/** The batch an entry holds, or null when it is not one (written by something else). */
export function decodeBatch(entry: StreamEntry): SharedEventBatch | null {
  const { from, events } = entry.message;
  if (typeof from !== 'string' || typeof events !== 'string') return null;
  try {
    const parsed: unknown = JSON.parse(events);
    return Array.isArray(parsed) ? { from, events: parsed as SharedEvent[] } : null;
  } catch {
    return null;
  }
}

function parts(id: string): [bigint, bigint] {
  const dash = id.indexOf('-');
  return dash < 0 ? [BigInt(id), 0n] : [BigInt(id.slice(0, dash)), BigInt(id.slice(dash + 1))];
}

/** Orders two stream ids: negative when `a` is older. */
export function compareIds(a: string, b: string): number {
  const [am, as] = parts(a);
  const [bm, bs] = parts(b);
  if (am !== bm) return am < bm ? -1 : 1;
  return as === bs ? 0 : as < bs ? -1 : 1;
}

export interface StreamPosition {
  /** The newest id the stream ever generated (`0-0` when it does not exist). */
  last: string;
  /** Whether entries newer than `after` were removed (trimmed) before anyone read them here. */
  trimmedAfter: boolean;
}

/**
 * Where the stream stands relative to `after` (the last id this reader saw). Trimming removes the
 * oldest entries, so entries after `after` were lost when the first remaining entry is newer than
 * `after` (or nothing remains though newer ids were generated). This can report a loss that did
 * not happen (the lost entries were exactly those up to `after`): a spurious re-read, never a miss.
 */
export async function streamPosition(
  client: RedisClient,
  key: string,
  after: string,
): Promise<StreamPosition> {
  let info: Awaited<ReturnType<RedisClient['xInfoStream']>>;
  try {
    info = await client.xInfoStream(key);
  } catch (err) {
    if (err instanceof Error && /no such key/i.test(err.message)) {
      return { last: ZERO_ID, trimmedAfter: compareIds(after, ZERO_ID) > 0 };
    }
    throw err;
  }
  const last = String(info['last-generated-id']);
  const first = info['first-entry'] as StreamEntry | null;
  const maxDeleted = info['max-deleted-entry-id'];
  const deletedAfter = typeof maxDeleted === 'string' && compareIds(maxDeleted, after) > 0;
  const trimmedAfter =
    deletedAfter || (first ? compareIds(first.id, after) > 0 : compareIds(last, after) > 0);
  return { last, trimmedAfter };
}
