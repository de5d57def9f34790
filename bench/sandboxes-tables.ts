/**
 * What bench:sandboxes prints on stdout: the start table with the last service start's workflow history
 * and the orchestration's share, and the lifecycle table per provider.
 */
import { median, pct, printTable } from './report';
import type { Lifecycle, ProviderLifecycle } from './sandboxes-lifecycle-runs';
import type { StartRuns } from './sandboxes-start-runs';
import { LIMITS, POLL_MS, RUNS } from './sandboxes-options';
import { printHistory } from './servers';
import { sandboxWorkflowId } from '../src/temporal/shared';

const f = (ms: number) => `${ms.toFixed(0)} ms`;

/**
 * The direct and the service start side by side, then where the last service start spent its time, from
 * its workflow history.
 */
export async function printStarts({ direct, service, last }: StartRuns, temporalAddress: string): Promise<void> {
  const rows = [
    ['path', 'median', 'p90', 'min'],
    ['spawn runtime directly, poll /alive', f(median(direct)), f(pct(direct, 90)), f(Math.min(...direct))],
    ['POST /api/v1/sandboxes -> RUNNING', f(median(service)), f(pct(service, 90)), f(Math.min(...service))],
  ];
  printTable(
    `Sandbox start, ${RUNS} runs each (poll every ${POLL_MS} ms; limits ${LIMITS === 'on' ? 'on: a cgroup and a file system each' : 'off'})`,
    rows,
  );
  const share = median(service) / median(direct) - 1;
  console.log(`\nlast service start: POST answered in ${last.postMs.toFixed(0)} ms`);
  await printHistory(temporalAddress, sandboxWorkflowId(last.id), 16);
  console.log(
    `\norchestration adds ${(share * 100).toFixed(0)}% to the median (${f(median(service) - median(direct))}); goal <= 20%`,
  );
}

function lifecycleRows(label: string, l: Lifecycle, direct: Lifecycle): string[][] {
  return (['start', 'pause', 'resume'] as const).map((step) => [
    label,
    step === 'start' ? 'start -> RUNNING' : step,
    f(median(l[step])),
    f(pct(l[step], 90)),
    f(median(direct[step])),
    `${(median(l[step]) / median(direct[step])).toFixed(2)}x`,
  ]);
}

/** Each provider's steps through the api beside the provider's own work. */
export function printLifecycles(lifecycles: { process: ProviderLifecycle; docker: ProviderLifecycle | null }): void {
  const { process: p, docker } = lifecycles;
  const lifecycle = [['provider', 'step', 'median', 'p90', 'direct median', 'ratio']];
  // A process's pause and resume are a signal each: no direct figure worth a column.
  const processDirect: Lifecycle = {
    start: p.direct.start,
    pause: p.runs.pause.map(() => NaN),
    resume: p.runs.resume.map(() => NaN),
  };
  lifecycle.push(
    ...lifecycleRows('process', p.runs, processDirect).map((r, i) => (i === 0 ? r : [...r.slice(0, 4), '-', '-'])),
  );
  if (docker) lifecycle.push(...lifecycleRows('docker', docker.runs, docker.direct));
  printTable(
    `Sandbox lifecycle through the api, ${RUNS} runs per provider (direct: the provider's own work, no service)`,
    lifecycle,
  );
}
