/**
 * `npm start` with EMBEDDED_TEMPORAL=server: the launcher runs the real Temporal server on the embedded
 * PostgreSQL instead of the dev server (scripts/servers/temporal-server.ts), with the web UI's server in
 * front of it (scripts/servers/temporal-ui.ts). A start reaches READY and its workflow shows through the
 * UI's API; the node's configuration, which holds its role's password, is readable by its owner only; stopped and
 * started again, the launcher finds the same cluster (the start's workflow is still there, the namespace
 * is not registered twice) and serves a new start.
 */
import { Client, Connection } from '@temporalio/client';
import fs from 'node:fs';
import path from 'node:path';
import { ScriptedLlm } from '../src/llm/scripted-llm';
import { startTaskWorkflowId } from '../src/temporal/shared';
import { testEnv } from './helpers/env';
import { freeLauncherPorts, Launcher, until } from './helpers/launcher';
import { adminSession } from './helpers/service-under-faults';

describe('the launcher with EMBEDDED_TEMPORAL=server', () => {
  let launcher: Launcher;
  let llm: ScriptedLlm;

  beforeAll(async () => {
    launcher = new Launcher(path.join(testEnv().dir, 'launcher-temporal-server'), await freeLauncherPorts(), {
      EMBEDDED_TEMPORAL: 'server',
    });
    llm = await new ScriptedLlm([]).start();
  });

  afterAll(async () => {
    launcher?.killAll();
    await llm?.close();
  });

  it('runs the Temporal server on the embedded PostgreSQL, and finds the same cluster after a restart', async () => {
    const first = launcher.launch();
    await launcher.waitUp(first);
    expect(first.output()).toContain('the Temporal server on PostgreSQL');
    expect(first.output()).toContain('registered the Temporal namespace');
    const config = path.join(launcher.dataDir, 'temporal-server', 'config', 'node.yaml');
    expect(fs.statSync(config).mode & 0o777).toBe(0o600);
    expect(fs.readFileSync(config, 'utf8')).toContain('"pluginName": "postgres12"');

    const session = await adminSession(launcher, first, llm.url);
    const started = (await session.call('POST', '/api/v1/app-conversations', {})).body;
    await until('the start is READY', async () => (await session.taskOf(started.id))?.status === 'READY', 120_000);

    // The UI: its page, and the start's workflow through its API (the UI server's round trip to the node).
    const ui = `http://127.0.0.1:${launcher.ports.ui}`;
    expect(first.output()).toContain(`Temporal UI  ${ui}`);
    const page = await fetch(`${ui}/`);
    expect([page.status, (await page.text()).toLowerCase()]).toEqual([200, expect.stringContaining('<!doctype html>')]);
    const shown = await fetch(`${ui}/api/v1/namespaces/default/workflows/${startTaskWorkflowId(started.id)}`);
    expect(shown.status).toBe(200);
    expect(JSON.stringify(await shown.json())).toContain('startTaskWorkflow');
    first.child.kill('SIGINT');
    expect(await first.exited).toBe(0);

    const restartedAt = Date.now();
    const second = launcher.launch();
    await launcher.waitUp(second);
    expect(second.output()).not.toContain('registered the Temporal namespace');
    const connection = await Connection.connect({ address: `127.0.0.1:${launcher.ports.temporal}` });
    try {
      // The first start's workflow, recorded before the restart, is still in the cluster's PostgreSQL
      // (it may still run a moment after READY, or have completed).
      const described = await new Client({ connection, namespace: 'default' }).workflow
        .getHandle(startTaskWorkflowId(started.id))
        .describe();
      expect(['RUNNING', 'COMPLETED']).toContain(described.status.name);
      expect(described.startTime.getTime()).toBeLessThan(restartedAt);
    } finally {
      await connection.close();
    }
    const again = (await session.call('POST', '/api/v1/app-conversations', {})).body;
    await until(
      'a start after the restart is READY',
      async () => (await session.taskOf(again.id))?.status === 'READY',
      120_000,
    );
    second.child.kill('SIGINT');
    expect(await second.exited).toBe(0);
  }, 600_000);
});
