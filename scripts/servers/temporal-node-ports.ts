/**
 * The ports of one node of the real Temporal server: its frontend's gRPC port is the cluster's address,
 * and every service has a gRPC and a membership port of its own.
 */
import { TEMPORAL_SERVER_PORT_OFFSETS } from '../../src/config';
import { freePortUpTo } from '../../src/process/net';

/** The membership table keeps a node's ports in a smallint column: a port above this stops the node at start. */
export const MAX_MEMBERSHIP_PORT = 32_767;

/** A node's ports: its frontend's gRPC port is the cluster's address; every other port is its own. */
export interface TemporalNodePorts {
  frontend: number;
  frontendHttp: number;
  history: number;
  matching: number;
  worker: number;
  /** The membership (ringpop) ports of frontend, history, matching and worker, in that order. */
  membership: [number, number, number, number];
}

/** Free ports for a node (each at most MAX_MEMBERSHIP_PORT), none of `taken`, which gets them: the tests' and benches' nodes. */
export async function freeNodePorts(taken: Set<number> = new Set()): Promise<TemporalNodePorts> {
  const ports = new Set<number>();
  while (ports.size < 9) {
    const port = await freePortUpTo(MAX_MEMBERSHIP_PORT);
    if (!taken.has(port)) ports.add(port);
  }
  for (const port of ports) taken.add(port);
  const [frontend, frontendHttp, history, matching, worker, ...membership] = [...ports];
  return {
    frontend: frontend!,
    frontendHttp: frontendHttp!,
    history: history!,
    matching: matching!,
    worker: worker!,
    membership: membership as TemporalNodePorts['membership'],
  };
}

/** The usual layout around a frontend port (the launcher's: the config reserves the same ports from sandboxes). */
export const portsAround = (frontend: number): TemporalNodePorts => {
  const o = TEMPORAL_SERVER_PORT_OFFSETS;
  return {
    frontend,
    frontendHttp: frontend + o.frontendHttp,
    history: frontend + o.history,
    matching: frontend + o.matching,
    worker: frontend + o.worker,
    membership: o.membership.map((d) => frontend + d) as unknown as TemporalNodePorts['membership'],
  };
};
