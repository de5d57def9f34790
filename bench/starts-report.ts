/**
 * What bench:starts prints on stdout: the starts table, the CPU table of the concurrent phase, the idle
 * and tail CPU lines, the workflow history of the last single start and the orchestration's share.
 */
import { cpuLine, cpuRows, type CpuScope } from './cpu';
import { median, pct, printTable } from './report';
import { printHistory } from './servers';
import type { ConcurrentPhase, SinglePhase } from './starts-phases';
import { FOLLOW, RUNTIME, SINGLE, STARTS, WORKERS } from './starts-options';
import { startTaskWorkflowId } from '../src/temporal/shared';

export interface StartsFigures {
  /** What runs Temporal, and where. */
  temporalName: string;
  temporalAddress: string;
  scopes: CpuScope[];
  concurrent: ConcurrentPhase;
  /** Concurrent starts READY with every status in order, and start tasks stored READY. */
  ready: number;
  tasksStored: number;
  singles: SinglePhase;
}

export async function printStartsReport(x: StartsFigures): Promise<void> {
  const { all, wallMs, idle0, cpuBefore, cpuAfter, tail } = x.concurrent;
  const { single, singleDelays, raw, lastId } = x.singles;
  const f = (ms: number) => `${ms.toFixed(0)} ms`;
  const lat = all.map((s) => s.ms);
  const delays = all.flatMap((s) => s.delays);
  printTable(
    `Starts on the ${RUNTIME} runtime, ${WORKERS === 1 ? 'one worker' : `${WORKERS} workers`}, one shared sandbox, FerretDB + ${x.temporalName}; stream-start follows the ${FOLLOW}`,
    [
      ['what', 'value'],
      [
        `${STARTS} concurrent stream-starts: READY with every status in order`,
        `${x.ready} / ${STARTS} (lost: ${STARTS - x.ready})`,
      ],
      ['start tasks stored READY', String(x.tasksStored)],
      ['starts per second', (STARTS / (wallMs / 1000)).toFixed(1)],
      ['stream-start -> READY, p50 / p99 (concurrent)', `${f(pct(lat, 50))} / ${f(pct(lat, 99))}`],
      ['a status written -> at the client, p50 / p99 (concurrent)', `${f(pct(delays, 50))} / ${f(pct(delays, 99))}`],
      [
        'a status written -> at the client, p50 / p99 (one start alone)',
        `${f(pct(singleDelays, 50))} / ${f(pct(singleDelays, 99))}`,
      ],
      [`one start alone, median of ${SINGLE}`, f(median(single))],
      ['the same steps made raw (runtime calls + driver writes), median', f(median(raw))],
    ],
  );
  printTable(
    `CPU by process over the ${STARTS} concurrent stream-starts (${(wallMs / 1000).toFixed(1)} s wall, ${(STARTS / (wallMs / 1000)).toFixed(1)} starts/s)`,
    cpuRows(x.scopes, cpuBefore, cpuAfter, STARTS),
  );
  console.log(`\nthe 1 s before the phase (idle): ${cpuLine(x.scopes, idle0, cpuBefore)}`);
  console.log(`the 1 s after the last stream ended (not in the table): ${cpuLine(x.scopes, cpuAfter, tail)}`);
  await printHistory(x.temporalAddress, startTaskWorkflowId(lastId));
  console.log(
    `\norchestration adds ${((median(single) / median(raw) - 1) * 100).toFixed(0)}% over the raw steps (${f(median(single) - median(raw))}); goal <= 20%`,
  );
}
