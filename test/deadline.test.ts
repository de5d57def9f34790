/**
 * deadline(): a wait's bound as a signal that garbage collection cannot take away (AbortSignal.any over
 * AbortSignal.timeout loses its timer on Node 20), that follows the caller's signals, and that clear() ends.
 */
import { getEventListeners } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { deadline } from '../src/deadline';
import { whileCollecting, within } from './helpers/timing';

describe('deadline', () => {
  it('cuts a read that trickles on, while garbage is collected all along', async () => {
    const server = http.createServer((_req, res) => {
      res.writeHead(200);
      const drip = setInterval(() => res.write('x'), 20);
      res.on('close', () => clearInterval(drip));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const bound = deadline(1000, new AbortController().signal);
    try {
      const read = async () => {
        const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
        const res = await fetch(url, { signal: bound.signal });
        for await (const _ of res.body as unknown as AsyncIterable<Uint8Array>);
      };
      // A lost timer would leave it reading on: `within` fails it after 20 s.
      await whileCollecting(() => expect(within(20_000, read())).rejects.toMatchObject({ name: 'TimeoutError' }));
      expect(bound.expired()).toBe(true);
    } finally {
      bound.clear();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it("follows the first of the caller's signals to end, with its reason, and is not then expired", async () => {
    const caller = new AbortController();
    const bound = deadline(60_000, undefined, caller.signal);
    caller.abort(new Error('the caller left'));
    expect(bound.signal.aborted).toBe(true);
    expect(bound.signal.reason).toEqual(new Error('the caller left'));
    expect(bound.expired()).toBe(false);

    const already = AbortSignal.abort('gone before');
    const later = new AbortController().signal;
    expect(deadline(60_000, already, later).signal.reason).toBe('gone before');
    expect(getEventListeners(later, 'abort')).toHaveLength(0); // nothing left on a signal that may live long
  });

  it('restart() gives the work its time again from now, and does nothing once cleared', async () => {
    const bound = deadline(1000);
    for (let i = 0; i < 4; i++) {
      await sleep(300);
      bound.restart();
    }
    expect(bound.signal.aborted).toBe(false); // 1.2 s in all, never 1 s without a restart
    await sleep(1500);
    expect(bound.expired()).toBe(true);

    const cleared = deadline(50);
    cleared.clear();
    cleared.restart(); // the work is over: no timer again
    await sleep(300);
    expect([cleared.signal.aborted, cleared.expired()]).toEqual([false, false]);
  });

  it('clear() ends the timer and lets go of the signals', async () => {
    const caller = new AbortController();
    const bound = deadline(50, caller.signal);
    bound.clear();
    await sleep(150);
    caller.abort();
    expect(bound.signal.aborted).toBe(false);
    expect(bound.expired()).toBe(false);
  });

  it('takes a wait past the timer range as the longest wait, not as none', async () => {
    const bound = deadline(Number.MAX_SAFE_INTEGER);
    await sleep(50);
    expect(bound.signal.aborted).toBe(false);
    bound.clear();
  });
});
