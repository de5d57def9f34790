/**
 * Workflows that run while the worker is upgraded: histories recorded by a real Temporal server with the
 * workflow code of commit b6e6613 (before the sandbox lifecycle was a class of its own and before start
 * tasks and callbacks carried search attributes) replay with today's code. Protobuf bytes in
 * test/fixtures (the JSON form needs a converter this install lacks).
 *
 * Sandboxes: one ordinary life (start, pause, resume) and two that met an update before their start's
 * turn (a resume, a delete sent before any worker polled), where that code started the runtime
 * regardless. A start task that reached READY, and a callbacks workflow's round.
 *
 * Recorded with the code of commit 1f47997: a sandbox whose runtime died (ERROR only after the grace
 * period, then resumed and deleted), and a start whose clone failed (ERROR, its new sandbox left running).
 *
 * Recorded by test/sandbox-hosts.test.ts (RECORD_FIXTURES=1) with the code that placed process sandboxes
 * on hosts: a sandbox placed on host A, started there, checked locally and then (its workflow on host
 * B's worker) on host A's queue, ERROR while host A was gone, RUNNING again when it came back, paused.
 *
 * Recorded with the code of commit d50e5fd (by test/start-queue.test.ts's first case): a start that
 * waited in its user's line and went on when a sandbox was paused, and that user's line workflow.
 * Recorded by test/start-queue-organizations.test.ts (RECORD_FIXTURES=1) with the code that added
 * organization lines: a start that passed its user's line and waited in its organization's.
 */
import fs from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { testEnv } from './helpers/env';
import { quietTemporalRuntime } from './helpers/temporal-runtime';

const fixture = (name: string) =>
  temporal.api.history.v1.History.decode(fs.readFileSync(path.join(__dirname, 'fixtures', `${name}.binpb`)));

describe('workflow replay across the upgrade', () => {
  beforeAll(() => quietTemporalRuntime());

  it.each([
    'sandbox-history-none',
    'sandbox-history-resume',
    'sandbox-history-delete',
    'start-task-history',
    'callbacks-history',
    'sandbox-history-gone',
    'start-task-history-error',
    'sandbox-history-hosts',
    'start-task-history-line',
    'start-admission-history',
    'start-task-history-org-line',
  ])('replays %s, recorded by the earlier code', async (name) => {
    const history = fixture(name);
    expect(history.events!.length).toBeGreaterThan(5);
    await expect(
      Worker.runReplayHistory({ workflowBundle: { codePath: testEnv().workflowBundlePath } }, history),
    ).resolves.toBeUndefined();
  });
});
