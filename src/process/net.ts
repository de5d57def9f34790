/** Loopback port helpers shared by the launcher, the process sandbox provider and the tests. */
import fs from 'node:fs';
import net from 'node:net';
import { killUserProcesses } from './process-tree';

/** True when something accepts TCP connections on host:port. */
export function portOpen(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host });
    socket.setTimeout(1000);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/** A port that was free a moment ago on loopback. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * The uids of the sockets that listen on `port` (TCP, any address, IPv4 and IPv6), read from
 * /proc/net/tcp and tcp6 (columns: local address as hex address:port, state 0A is LISTEN, then uid).
 */
export function listenerUids(port: number): number[] {
  const uids = new Set<number>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = fs.readFileSync(table, 'utf8');
    } catch {
      continue; // no IPv6 on this machine
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 8 || f[3] !== '0A') continue;
      if (parseInt(f[1]!.split(':')[1]!, 16) === port) uids.add(Number(f[7]));
    }
  }
  return [...uids];
}

/**
 * A port of the service that a sandbox's uid listens on (it bound the port while the service's process
 * was down) is given back: that uid's processes are killed. The sandboxes' firewall already keeps such a
 * listener from answering anyone; this lets the service bind the port again. Holders outside the range
 * are left alone (the start then fails with the port in use). Answers the uids whose processes were killed.
 */
export async function reclaimPort(port: number, uidRange: [number, number]): Promise<number[]> {
  const holders = listenerUids(port).filter((u) => u >= uidRange[0] && u <= uidRange[1]);
  for (const uid of holders) await killUserProcesses(uid);
  return holders;
}
