/**
 * Sandbox workflows that run while the worker is upgraded: histories recorded with the workflow code
 * before the lifecycle was a class of its own (commit b6e6613) replay with today's code. One has an
 * ordinary life (start, pause, resume); two met an update before their start's turn (a resume, a delete
 * sent before any worker polled), where that code started the runtime regardless.
 */
import fs from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { testEnv } from './helpers/env';
import { quietTemporalRuntime } from './helpers/temporal-runtime';

/** A history as the server sent it (protobuf bytes: the JSON form needs a converter this install lacks). */
const fixture = (name: string) => temporal.api.history.v1.History.decode(fs.readFileSync(path.join(__dirname, 'fixtures', `sandbox-history-${name}.binpb`)));

describe('sandbox workflow replay across the upgrade', () => {
  beforeAll(() => quietTemporalRuntime());

  it.each(['none', 'resume', 'delete'])('replays a history recorded by the earlier code (early update: %s)', async (name) => {
    const history = fixture(name);
    expect(history.events!.length).toBeGreaterThan(5);
    await expect(Worker.runReplayHistory({ workflowBundle: { codePath: testEnv().workflowBundlePath } }, history)).resolves.toBeUndefined();
  });
});
