/** The ports of this machine the service listens on or reaches, which sandboxes may never answer on. */
import type { Env } from './env-schema';

/** The port of a URL or host:port, when it names one (a URL without a port has its scheme's). */
function portIn(address: string | undefined): number[] {
  if (!address) return [];
  try {
    const u = new URL(address.includes('://') ? address : `tcp://${address}`);
    const port = Number(u.port || { 'http:': 80, 'https:': 443 }[u.protocol] || 0);
    return port ? [port] : [];
  } catch {
    return [];
  }
}

/**
 * The ports the service listens on, or reaches, on this machine: the api, its and the worker's metrics,
 * the database and Temporal (each host of a mongodb:// list), the embedded servers' ports, the local LLM
 * proxies of SANDBOX_LOCAL_ALLOW, the traces endpoint, the git host and the Docker engine, and
 * SANDBOX_RESERVED_PORTS. Sandboxes may not answer on any of them.
 */
export function servicePorts(e: Env): number[] {
  const mongoHosts = /^mongodb(?:\+srv)?:\/\/(?:[^@/]*@)?([^/?]+)/.exec(e.MONGODB_URI ?? '')?.[1]?.split(',') ?? [];
  const ports = [
    e.API_PORT,
    ...portIn(e.PUBLIC_BASE_URL),
    ...portIn(e.SANDBOX_CONTROL_PLANE_URL),
    ...portIn(e.METRICS_ADDRESS),
    ...portIn(e.WORKER_METRICS_ADDRESS),
    ...portIn(e.TEMPORAL_ADDRESS),
    ...portIn(e.POSTGRES_URL),
    ...mongoHosts.flatMap((h) => (/:\d+$/.test(h) ? portIn(h) : [27017])),
    // What runtimes send keys to (a local LLM proxy), and where the service sends traces and git requests.
    ...e.SANDBOX_LOCAL_ALLOW.flatMap(portIn),
    ...portIn(e.OTEL_EXPORTER_OTLP_ENDPOINT ?? 'http://localhost:4318'),
    ...portIn(e.GIT_CLONE_BASE_URL),
    ...(e.DOCKER_HOST.startsWith('unix:') ? [] : portIn(e.DOCKER_HOST)),
    e.EMBEDDED_MONGODB_PORT,
    e.EMBEDDED_POSTGRES_PORT,
    e.EMBEDDED_TEMPORAL_PORT,
    e.EMBEDDED_TEMPORAL_UI_PORT,
    // The real server's own services listen around its frontend (scripts/servers/temporal-node-ports.ts portsAround).
    ...(e.EMBEDDED_TEMPORAL === 'server'
      ? Object.values(TEMPORAL_SERVER_PORT_OFFSETS)
          .flat()
          .map((d) => e.EMBEDDED_TEMPORAL_PORT + d)
      : []),
    ...e.SANDBOX_RESERVED_PORTS,
  ];
  return [...new Set(ports.filter((p) => p > 0))].sort((a, b) => a - b);
}

/**
 * Where the real Temporal server's own services listen, from its frontend's port (EMBEDDED_TEMPORAL_PORT):
 * the usual layout around 7233 (history 7234, matching 7235, worker 7239, HTTP 7243, membership 6933..).
 */
export const TEMPORAL_SERVER_PORT_OFFSETS = {
  frontendHttp: 10,
  history: 1,
  matching: 2,
  worker: 6,
  membership: [-300, -299, -298, -294],
} as const;
