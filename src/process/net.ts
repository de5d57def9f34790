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

/**
 * Listens on host:port. A failure to listen is thrown; a failure of the listening socket later (out of file
 * handles on accept) goes to `onError`, so it is reported rather than ending the process (an 'error' event
 * nobody listens to is thrown) or swallowed.
 */
export async function listenOn(
  server: net.Server,
  port: number,
  host: string,
  onError: (e: Error) => void,
): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const failed = (e: Error) => {
      server.off('listening', listening);
      reject(e);
    };
    const listening = () => {
      server.off('error', failed);
      server.on('error', onError);
      resolve();
    };
    server.once('error', failed);
    server.once('listening', listening);
    server.listen(port, host);
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
 * A port free a moment ago on loopback, between 20000 and `max` (below the kernel's ephemeral range, where
 * listen(0) ports come from): for a server that keeps its ports in a smallint column (Temporal's membership).
 */
export async function freePortUpTo(max: number): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * (max - 20_000));
    const free = await new Promise<boolean>((resolve) => {
      const server = net.createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (free) return port;
  }
}

/**
 * The sockets that listen on `port` (TCP, any address, IPv4 and IPv6), read from /proc/net/tcp and tcp6
 * (columns: local address as hex address:port, state 0A is LISTEN, the creator's uid, the inode).
 */
function listeners(port: number): { uid: number; inode: string }[] {
  const found: { uid: number; inode: string }[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = fs.readFileSync(table, 'utf8');
    } catch {
      continue; // no IPv6 on this machine
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || f[3] !== '0A') continue;
      if (parseInt(f[1]!.split(':')[1]!, 16) === port) found.push({ uid: Number(f[7]), inode: f[9]! });
    }
  }
  return found;
}

/** The uids of the sockets that listen on `port` (the uid that created each). */
export function listenerUids(port: number): number[] {
  return [...new Set(listeners(port).map((l) => l.uid))];
}

/** The uids of the processes that hold one of these socket inodes open (a socket may be passed to another process). */
function holderUids(inodes: Set<string>): number[] {
  const uids = new Set<number>();
  for (const pid of fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    let fds: string[];
    try {
      fds = fs.readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      let target: string;
      try {
        target = fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      const m = /^socket:\[(\d+)\]$/.exec(target);
      if (m && inodes.has(m[1]!)) {
        try {
          uids.add(fs.statSync(`/proc/${pid}`).uid);
        } catch {
          // gone
        }
        break;
      }
    }
  }
  return [...uids];
}

/**
 * A port of the service that a sandbox's uid listens on (it bound the port while the service's process
 * was down) is given back: the processes of every sandbox uid that made or holds such a listener are
 * killed (a socket passed to another sandbox's process is found by its inode), until none is left.
 * The sandboxes' firewall already keeps such a listener from answering anyone; this lets the service
 * bind the port again. Holders outside the range are left alone (the start then fails with the port
 * in use). Answers the uids whose processes were killed.
 */
export async function reclaimPort(port: number, uidRange: [number, number]): Promise<number[]> {
  const inRange = (u: number) => u >= uidRange[0] && u <= uidRange[1];
  const killed: number[] = [];
  for (let round = 0; round < 10; round++) {
    const found = listeners(port);
    const holders = found.length === 0 ? [] : holderUids(new Set(found.map((l) => l.inode))).filter(inRange);
    const uids = [...new Set([...found.filter((l) => inRange(l.uid)).map((l) => l.uid), ...holders])];
    if (uids.length === 0) return killed;
    for (const uid of uids) {
      await killUserProcesses(uid);
      if (!killed.includes(uid)) killed.push(uid);
    }
  }
  return killed;
}
