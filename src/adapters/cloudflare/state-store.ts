/** The Durable Object's SQLite tables: a counter of starts and the saved fleet state, in parts. */

/** Lease-number epochs wrap far beyond any realistic count of restarts. */
export const MAX_EPOCH = 2 ** 20;
/** SQLite rows hold at most 2 MB; JSON is cut into parts well below that (3 bytes per char at worst). */
const PART_CHARS = 500_000;

/** The object's SQLite tables: a counter of starts and the saved state in parts. */
export class StateStore {
  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly sql = storage.sql,
  ) {
    sql.exec('CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)');
    sql.exec(
      'CREATE TABLE IF NOT EXISTS state (key TEXT NOT NULL, part INTEGER NOT NULL, value TEXT NOT NULL, PRIMARY KEY (key, part))',
    );
  }

  /** 1, 2, 3, ... on each start (wrapping far beyond any realistic count). */
  nextEpoch(): number {
    this.sql.exec(
      "INSERT INTO meta VALUES ('epoch', 1) ON CONFLICT(key) DO UPDATE SET value = value % ? + 1",
      MAX_EPOCH - 1,
    );
    return this.sql.exec<{ value: number }>("SELECT value FROM meta WHERE key = 'epoch'").one().value;
  }

  save(key: string, value: unknown): void {
    const text = JSON.stringify(value);
    this.storage.transactionSync(() => {
      this.sql.exec('DELETE FROM state WHERE key = ?', key);
      for (let i = 0; i * PART_CHARS < text.length; i++) {
        this.sql.exec(
          'INSERT INTO state VALUES (?, ?, ?)',
          key,
          i,
          text.slice(i * PART_CHARS, (i + 1) * PART_CHARS),
        );
      }
    });
  }

  load<T>(key: string): T | undefined {
    const rows = this.sql
      .exec<{ value: string }>('SELECT value FROM state WHERE key = ? ORDER BY part', key)
      .toArray();
    return rows.length === 0 ? undefined : (JSON.parse(rows.map((r) => r.value).join('')) as T);
  }
}
