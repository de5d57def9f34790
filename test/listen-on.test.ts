/**
 * A listening socket's failures after the start (out of file handles on accept) are reported, never
 * thrown from the emitter (which would end the process) nor swallowed; a failed listen leaves nothing
 * running: listenOn itself, the api, and the gateway's refresh timer.
 */
import net from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { setTimeout as sleep } from 'node:timers/promises';
import { startGateway } from '../src/gateway/tcp-gateway';
import { listenOn } from '../src/process/net';
import { startTestApi } from './helpers/api';
import { testConfig } from './helpers/env';

const closeServer = (s: net.Server) => new Promise<void>((resolve) => s.close(() => resolve()));

describe('listening sockets', () => {
  it('listenOn reports each later error of the socket, and a failed listen leaves no listener behind', async () => {
    const seen: string[] = [];
    const server = net.createServer();
    await listenOn(server, 0, '127.0.0.1', (e) => seen.push(e.message));
    try {
      server.emit('error', new Error('EMFILE one'));
      server.emit('error', new Error('EMFILE two'));
      expect(seen).toEqual(['EMFILE one', 'EMFILE two']);

      const taken = net.createServer();
      const port = (server.address() as net.AddressInfo).port;
      await expect(listenOn(taken, port, '127.0.0.1', () => undefined)).rejects.toMatchObject({ code: 'EADDRINUSE' });
      expect([taken.listenerCount('error'), taken.listenerCount('listening')]).toEqual([0, 0]);
    } finally {
      await closeServer(server);
    }
  });

  it('the api logs an error of its listening socket after the start and goes on answering', async () => {
    const lines: { msg?: string; err?: { message?: string } }[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    });
    const t = await startTestApi(testConfig(), pino({ level: 'error' }, sink));
    try {
      t.api.server.emit('error', new Error('accept failed: EMFILE'));
      t.api.server.emit('error', new Error('accept failed again: EMFILE'));
      expect((await t.request('GET', '/health')).status).toBe(200);
      await sleep(50); // pino writes through the stream asynchronously
      expect(lines.filter((l) => l.msg === 'the api listener failed').map((l) => l.err?.message)).toEqual([
        'accept failed: EMFILE',
        'accept failed again: EMFILE',
      ]);
    } finally {
      await t.close();
    }
  });

  it('a gateway whose port is taken fails to start and looks nothing up afterwards', async () => {
    const holder = net.createServer();
    await listenOn(holder, 0, '127.0.0.1', () => undefined);
    const { port } = holder.address() as net.AddressInfo;
    let lookups = 0;
    try {
      await expect(
        startGateway({
          host: '127.0.0.1',
          port,
          upstreamHost: 'api',
          upstreamPort: 1,
          connectTimeoutMs: 1000,
          maxConnections: 10,
          refreshMs: 20,
          resolve: async () => {
            lookups++;
            return ['127.0.0.1'];
          },
        }),
      ).rejects.toMatchObject({ code: 'EADDRINUSE' });
      const after = lookups;
      await sleep(200); // ten refresh periods
      expect(lookups).toBe(after);
    } finally {
      await closeServer(holder);
    }
  });
});
