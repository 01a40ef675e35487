/**
 * Part 3 of `npm run bench:replicas`: failover. Three replicas sharing a store, `sticky_least_loaded`,
 * the routing benchmark's engines and prompts; `sessions` multi-turn conversations in progress at any
 * time (`x-session-id: conv-<i>`), taking turns through `concurrency` clients, every turn to the next
 * live replica in turn. Halfway through,
 * one replica is killed (SIGKILL). The client acts as a load balancer would: a request that fails on
 * the killed replica is counted apart and sent again to a survivor, and that replica gets no more
 * requests. Measured: errors on the survivors, sessions whose engine changed (from
 * `x-routed-worker-id`), and how long after the last answer the survivors' `/workers` load is 0.
 */

import type { Server } from './overhead-procs.ts';
import { newKeyPrefix, startReplicas, storeArgs, workerLoads } from './replicas-procs.ts';
import { chat, type Message, startEngines, systemPrompt, userTurn } from './routing-workload.ts';

export interface FailoverOptions {
  seconds: number;
  concurrency: number;
  /** Conversations in progress at any time. */
  sessions: number;
  turns: number;
}

export interface FailoverResult {
  requests: number;
  afterKill: number;
  survivorErrors: number;
  deadErrors: number;
  sessions: number;
  spanningKill: number;
  changedEngine: number;
  changedAcrossKill: number;
  /** Survivors' summed `/workers` load right after the last answer. */
  loadAtEnd: number;
  /** ms from the last answer until every survivor reported 0 load (null: not within the wait). */
  drainMs: number | null;
  killToZeroMs: number | null;
}

const REPLICAS = 3;
const VICTIM = 1;
const DRAIN_WAIT_MS = 20_000;
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function failoverRun(o: FailoverOptions): Promise<FailoverResult> {
  const engines = await startEngines();
  const extra = [...storeArgs(newKeyPrefix()), '--policy', 'sticky_least_loaded'];
  try {
    const servers = await startReplicas(
      'failover',
      REPLICAS,
      engines.map((e) => e.url),
      extra,
      true,
    );
    try {
      return await drive(servers, o);
    } finally {
      await Promise.all(servers.map((s) => s.stop()));
    }
  } finally {
    await Promise.all(engines.map((e) => e.close()));
  }
}

/** The run itself: traffic, the kill halfway, then the survivors' load until it is 0. */
async function drive(servers: Server[], o: FailoverOptions): Promise<FailoverResult> {
  const live = servers.map(() => true);
  let killedAt = Number.POSITIVE_INFINITY;
  let next = 0;
  const pick = () => {
    for (;;) {
      const i = next++ % REPLICAS;
      if (live[i]) return i;
    }
  };
  const engineOf = new Map<number, { first: string; changed: boolean; before: boolean; after: boolean }>();
  const r: FailoverResult = {
    requests: 0,
    afterKill: 0,
    survivorErrors: 0,
    deadErrors: 0,
    sessions: 0,
    spanningKill: 0,
    changedEngine: 0,
    changedAcrossKill: 0,
    loadAtEnd: 0,
    drainMs: null,
    killToZeroMs: null,
  };
  const begin = performance.now();
  const deadline = begin + o.seconds * 1000;

  /** One turn, resent to a survivor when the killed replica fails it; undefined: a survivor failed it. */
  const send = async (conv: number, history: Message[]): Promise<string | undefined> => {
    for (;;) {
      const i = pick();
      const sentAt = performance.now();
      try {
        const turn = await chat(servers[i]?.url as string, history, { 'x-session-id': `conv-${conv}` });
        const afterKill = sentAt >= killedAt;
        r.requests++;
        if (afterKill) r.afterKill++;
        const id = turn.workerId ?? '?';
        const seen = engineOf.get(conv) ?? { first: id, changed: false, before: false, after: false };
        engineOf.set(conv, seen);
        if (id !== seen.first) seen.changed = true;
        if (afterKill) seen.after = true;
        else seen.before = true;
        return turn.answer;
      } catch {
        if (i === VICTIM && performance.now() >= killedAt) {
          r.deadErrors++;
          live[i] = false;
          continue;
        }
        r.survivorErrors++;
        return undefined;
      }
    }
  };
  // `sessions` conversations in progress at any time, taking turns (as the routing workload's
  // queue does); one that has had its `turns` is replaced by a new one.
  const histories = new Map<number, Message[]>();
  const queue = Array.from({ length: o.sessions }, (_, i) => i);
  let conversations = o.sessions;
  const client = async () => {
    while (performance.now() < deadline) {
      const conv = queue.shift();
      if (conv === undefined) return;
      const history = histories.get(conv) ?? [{ role: 'system', content: systemPrompt(conv) }];
      histories.set(conv, history);
      const turn = (history.length - 1) / 2;
      history.push({ role: 'user', content: userTurn(conv, turn) });
      const answer = await send(conv, history);
      if (answer !== undefined) history.push({ role: 'assistant', content: answer });
      if (answer !== undefined && turn + 1 < o.turns) queue.push(conv);
      else {
        histories.delete(conv);
        queue.push(conversations++);
      }
    }
  };
  const killer = (async () => {
    await pause(o.seconds * 500);
    killedAt = performance.now();
    process.kill(servers[VICTIM]?.pid as number, 'SIGKILL');
  })();
  await Promise.all([killer, ...Array.from({ length: o.concurrency }, client)]);
  const ended = performance.now();

  const survivors = servers.filter((_, i) => i !== VICTIM);
  const total = async () =>
    (await Promise.all(survivors.map((s) => workerLoads(s.url)))).flat().reduce((a, b) => a + b, 0);
  r.loadAtEnd = await total();
  for (let load = r.loadAtEnd; performance.now() - ended < DRAIN_WAIT_MS; load = await total()) {
    if (load === 0) {
      r.drainMs = performance.now() - ended;
      r.killToZeroMs = performance.now() - killedAt;
      break;
    }
    await pause(20);
  }
  for (const s of engineOf.values()) {
    r.sessions++;
    if (s.changed) r.changedEngine++;
    if (s.before && s.after) {
      r.spanningKill++;
      if (s.changed) r.changedAcrossKill++;
    }
  }
  return r;
}

export function printFailover(r: FailoverResult, o: FailoverOptions): void {
  const ms = (v: number | null) =>
    v === null ? `not within ${DRAIN_WAIT_MS / 1000} s` : `${v.toFixed(0)} ms`;
  console.log(
    `\nFailover: ${REPLICAS} replicas, sticky_least_loaded, x-session-id, ${o.sessions} ${o.turns}-turn ` +
      `conversations in progress at a time, ${o.concurrency} clients, ${o.seconds} s; ` +
      `one replica killed (SIGKILL) at ${o.seconds / 2} s:\n`,
  );
  console.log('| measure | value |');
  console.log('|---|---:|');
  const rows: [string, string][] = [
    ['answered turns (after the kill)', `${r.requests} (${r.afterKill})`],
    ['client errors on the survivors', String(r.survivorErrors)],
    ['requests failed on the killed replica (resent to a survivor)', String(r.deadErrors)],
    ['sessions (spanning the kill)', `${r.sessions} (${r.spanningKill})`],
    [
      'sessions whose engine changed (of those spanning the kill)',
      `${r.changedEngine} (${r.changedAcrossKill})`,
    ],
    ["survivors' /workers load at the last answer", String(r.loadAtEnd)],
    ["survivors' /workers load back to 0: after the last answer", ms(r.drainMs)],
    ['… after the kill', ms(r.killToZeroMs)],
  ];
  for (const [k, v] of rows) console.log(`| ${k} | ${v} |`);
}
