/**
 * How a process runtime is known to be up: the port an isolated one reports on its fd 3, the listener it
 * opens (only its own uid's), and, when it is not, the last lines of its log to say why.
 */
import fs from 'node:fs';
import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { listenerUids } from '../../src/process/net';
import { readStat } from '../../src/process/process-tree';

/** How long an isolated runtime has to report the port it bound. */
const PORT_REPORT_MS = 30_000;
/** How long the OpenHands agent server has to listen (it imports a few hundred modules first). */
const LISTEN_MS = 120_000;

/** The last lines a runtime wrote, for a status_detail a person can act on. */
export function lastWords(logFile: string): string {
  let text: string;
  try {
    const fd = fs.openSync(logFile, 'r');
    const size = fs.fstatSync(fd).size;
    const buf = Buffer.alloc(Math.min(size, 600));
    fs.readSync(fd, buf, 0, buf.length, size - buf.length);
    fs.closeSync(fd);
    text = buf.toString('utf8').trim();
  } catch {
    return '';
  }
  const lines = text.split('\n').slice(-3).join(' | ');
  return lines ? `; its log (${logFile}) ends: ${lines}` : `; its log is ${logFile}`;
}

/**
 * The port an isolated runtime reports on its fd 3: a pipe that only it and this process hold, so no
 * file of the sandbox's (a FIFO, a link, a huge file) stands in between. Bounded in size and time.
 */
export function reportedPort(stream: Readable, pid: number, logFile: string): Promise<number> {
  return new Promise((resolve, reject) => {
    let text = '';
    const done = (error: Error | null, port = 0) => {
      clearTimeout(timer);
      clearInterval(alive);
      stream.destroy();
      if (error) reject(error);
      else resolve(port);
    };
    const exited = () => new Error(`the runtime process (pid ${pid}) exited before it listened${lastWords(logFile)}`);
    const timer = setTimeout(
      () =>
        done(
          new Error(
            `the runtime (pid ${pid}) did not report its port within ${PORT_REPORT_MS / 1000} s${lastWords(logFile)}`,
          ),
        ),
      PORT_REPORT_MS,
    );
    const alive = setInterval(() => readStat(pid) || done(exited()), 200);
    stream.on('data', (d: Buffer) => {
      text += d.toString('latin1');
      if (text.length > 5) done(new Error('the runtime reported something that is not a port'));
    });
    stream.on('error', (e) => done(e));
    stream.on('end', () => {
      const port = Number(text);
      if (text === '') done(exited());
      else
        done(
          /^\d{1,5}$/.test(text) && port > 0 && port < 65536
            ? null
            : new Error('the runtime reported something that is not a port'),
          port,
        );
    });
  });
}

/**
 * Waits until the runtime listens on `port` (bounded, while it lives); then every listener there must be
 * its uid's (isolated) or this worker's: a port another sandbox took first is not handed out as its.
 */
export async function awaitListener(
  port: number,
  pid: number,
  uid: number | undefined,
  logFile: string,
  progress?: () => void,
): Promise<void> {
  const deadline = Date.now() + LISTEN_MS;
  for (;;) {
    const uids = listenerUids(port);
    if (uids.length > 0) {
      const owner = uid ?? process.getuid?.();
      if (uids.some((u) => u !== owner))
        throw new Error(
          `port ${port} chosen for the runtime (pid ${pid}) is held by another user (uid ${uids.join(', ')})`,
        );
      return;
    }
    const stat = readStat(pid);
    if (!stat || stat.state === 'Z')
      throw new Error(`the runtime process (pid ${pid}) exited before it listened${lastWords(logFile)}`);
    if (Date.now() > deadline)
      throw new Error(
        `the runtime (pid ${pid}) did not listen on port ${port} within ${LISTEN_MS / 1000} s${lastWords(logFile)}`,
      );
    progress?.();
    await sleep(100);
  }
}
