/**
 * The Temporal web UI for the real Temporal server (the dev server serves its own): the UI server
 * (`github.com/temporalio/ui-server/v2`, obtainTemporalUi) on loopback, in front of one frontend. Its
 * configuration is written to `<dir>/config/ui.yaml`; it gets PATH and TZ only (a TEMPORAL_* variable
 * of the caller's would change what it loads).
 */
import type { Child } from './child';
import { configFiles, startTemporalBinary } from './temporal-binary';

export interface TemporalUiOptions {
  binary: string;
  /** Its own directory: configuration, log and pid file. */
  dir: string;
  port: number;
  /** The frontend it shows (host:port). */
  temporalAddress: string;
  namespace: string;
  pidFile?: boolean;
  onSpawn?: (child: Child) => void;
}

/** True when the UI server answers its API (a round trip to the frontend behind it) within `timeoutMs`. */
export async function uiAnswers(url: string, timeoutMs = 3000): Promise<boolean> {
  try {
    const res = await fetch(`${url}/api/v1/cluster-info`, {
      signal: AbortSignal.timeout(timeoutMs),
      redirect: 'error',
    });
    await res.body?.cancel();
    return res.ok;
  } catch {
    return false;
  }
}

export async function startTemporalUi(o: TemporalUiOptions): Promise<Child & { url: string }> {
  const write = configFiles(o.dir);
  const config = {
    temporalGrpcAddress: o.temporalAddress,
    host: '127.0.0.1',
    port: o.port,
    enableUi: true,
    defaultNamespace: o.namespace,
    // Plain http on loopback: the CSRF cookie cannot be a secure one; no other origin is let in.
    cors: { cookieInsecure: true, allowOrigins: [], unsafeAllowAllOrigins: false },
    notifyOnNewVersion: false,
    refreshInterval: '0s',
  };
  // JSON is YAML: every string quoted.
  write('ui.yaml', JSON.stringify(config, null, 2) + '\n');
  const url = `http://127.0.0.1:${o.port}`;
  const child = await startTemporalBinary(o, {
    name: 'temporal-ui',
    configName: 'ui',
    readyTimeoutMs: 60_000,
    ready: () => uiAnswers(url),
    alive: () => uiAnswers(url, 4000),
  });
  return Object.assign(child, { url });
}
