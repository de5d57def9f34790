/**
 * The measured phases of bench:starts: N stream-starts at once with the CPU of each process over them,
 * then one start at a time alternating with the same steps made raw.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from 'mongodb';
import { cpuSnapshot, type CpuScope, type CpuSnapshot } from './cpu';
import { progress } from './report';
import type { StreamStart } from './starts-runs';
import { SINGLE, STARTS } from './starts-options';
import { START_TASK_STATUSES } from '../src/schemas/app-conversations';

const STATUSES = START_TASK_STATUSES.filter((s) => s !== 'ERROR');

export interface ConcurrentPhase {
  all: StreamStart[];
  wallMs: number;
  /** CPU snapshots: 1 s before the phase, at its start, at its end, 1 s after. */
  idle0: CpuSnapshot;
  cpuBefore: CpuSnapshot;
  cpuAfter: CpuSnapshot;
  tail: CpuSnapshot;
}

/** `STARTS` stream-starts at once, each read to its end, with CPU snapshots of `scopes` around them. */
export async function concurrentStarts(
  scopes: CpuScope[],
  serviceStart: () => Promise<StreamStart>,
): Promise<ConcurrentPhase> {
  const idle0 = cpuSnapshot(scopes);
  await sleep(1000);
  const cpuBefore = cpuSnapshot(scopes);

  progress(`${STARTS} concurrent starts`);
  const t0 = performance.now();
  let done = 0;
  const ticker = setInterval(() => progress(`${done}/${STARTS} streams ended`), 30_000);
  const all = await Promise.all(Array.from({ length: STARTS }, () => serviceStart().finally(() => done++))).finally(
    () => clearInterval(ticker),
  );
  const wallMs = performance.now() - t0;
  const cpuAfter = cpuSnapshot(scopes);
  await sleep(1000);
  const tail = cpuSnapshot(scopes);
  return { all, wallMs, idle0, cpuBefore, cpuAfter, tail };
}

/**
 * How the concurrent starts ended: how many were READY with every status in order (those that were not
 * are said on the progress output), and how many start tasks are stored READY.
 */
export async function concurrentOutcome(all: StreamStart[], db: Db): Promise<{ ready: number; tasksStored: number }> {
  const ready = all.filter((s) => s.statuses.join() === STATUSES.join()).length;
  const failed = all.filter((s) => s.statuses.at(-1) !== 'READY');
  if (failed.length > 0) progress(`not READY: ${failed.length}, e.g. ${JSON.stringify(failed[0])}`);
  const tasksStored = await db.collection('start_tasks').countDocuments({ status: 'READY' });
  return { ready, tasksStored };
}

export interface SinglePhase {
  /** Each start alone, in ms. */
  single: number[];
  /** Every status's delay from its write to the client, over those starts. */
  singleDelays: number[];
  /** The same steps made raw, in ms. */
  raw: number[];
  /** The id of the last start task, for its workflow history. */
  lastId: string;
}

/** `SINGLE` starts one at a time, each followed by the same steps made raw. */
export async function singleStarts(
  serviceStart: () => Promise<StreamStart>,
  rawStart: () => Promise<number>,
): Promise<SinglePhase> {
  progress(`${SINGLE} single starts, alternating with the raw steps`);
  const single: number[] = [];
  const singleDelays: number[] = [];
  const raw: number[] = [];
  let lastId = '';
  for (let i = 0; i < SINGLE; i++) {
    const s = await serviceStart();
    single.push(s.ms);
    singleDelays.push(...s.delays);
    lastId = s.id ?? lastId;
    raw.push(await rawStart());
  }
  return { single, singleDelays, raw, lastId };
}
