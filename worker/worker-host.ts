/**
 * The worker's host: the name its process sandboxes record (their host task queue). WORKER_HOST when
 * set; otherwise a name made once and kept in DATA_DIR/worker-host, beside the sandboxes' files: it
 * outlives the worker process and its container (a new container id or pod name each time would orphan
 * every sandbox), workers of one DATA_DIR share it, and two DATA_DIRs are two hosts.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const HOST_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

/** This machine's host name as the start of a host name (its first label, what WORKER_HOST allows). */
function machineLabel(): string {
  return (
    os
      .hostname()
      .split('.')[0]!
      .replace(/[^A-Za-z0-9_-]/g, '-')
      .replace(/^[^A-Za-z0-9]+/, '')
      .slice(0, 40) || 'host'
  );
}

/** WORKER_HOST, or the one kept in `dataDir` (made now if there is none). */
export function workerHost(configured: string | undefined, dataDir: string): string {
  if (configured) return configured;
  const file = path.join(dataDir, 'worker-host');
  const read = (): string | null => {
    let text: string;
    try {
      // Read through no link, and only a regular file (a FIFO would hold the worker's start): the file is
      // the worker's own, in its own directory; 256 bytes at most.
      const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
      try {
        if (!fs.fstatSync(fd).isFile()) throw new Error('not a regular file');
        const buffer = Buffer.alloc(256);
        text = buffer
          .subarray(0, fs.readSync(fd, buffer, 0, buffer.length, 0))
          .toString('utf8')
          .trim();
      } finally {
        fs.closeSync(fd);
      }
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw new Error(`${file} cannot be read (${(e as Error).message}); remove it, or set WORKER_HOST`, { cause: e });
    }
    if (!HOST_NAME.test(text))
      throw new Error(`${file} holds no host name (letters, digits, . _ -, at most 63); remove it, or set WORKER_HOST`);
    return text;
  };
  const kept = read();
  if (kept) return kept;
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const made = `${machineLabel()}-${randomBytes(4).toString('hex')}`;
  try {
    fs.writeFileSync(file, `${made}\n`, { flag: 'wx', mode: 0o600 });
    return made;
  } catch (e) {
    // Another worker of this DATA_DIR made it first: theirs is ours.
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return read() ?? made;
    throw e;
  }
}
