/**
 * Which driver errors the api answers as "the database did not answer" (503 with Retry-After) and which
 * it does not: built with the driver's own error classes, with the messages seen in the freeze suite.
 */
import * as net from 'node:net';
import {
  MongoBulkWriteError,
  MongoNetworkError,
  MongoNetworkTimeoutError,
  MongoServerError,
  MongoServerSelectionError,
} from 'mongodb';
import { Unavailable } from '../src/errors';
import { DatabaseBusyError, isDatabaseUnreachable, translateStoreError, withinBudget } from '../src/store/errors';

describe('translateStoreError', () => {
  const unreachable: [string, unknown][] = [
    ['a connection that timed out', new MongoNetworkTimeoutError('connection 23 to 127.0.0.1:22051 timed out')],
    ['a connection that closed', new MongoNetworkError('connection 5 to 127.0.0.1:22051 closed')],
    [
      'no server to select',
      new MongoServerSelectionError('Server selection timed out after 5000 ms', {
        type: 'Unknown',
        servers: new Map(),
      } as never),
    ],
    [
      'an insertMany cut short by a timeout',
      new MongoBulkWriteError(new MongoNetworkTimeoutError('connection 23 to 127.0.0.1:22051 timed out'), {} as never),
    ],
    [
      "FerretDB's answer when its PostgreSQL does not take connections",
      new MongoServerError({
        code: 1,
        errmsg:
          '[msg_find.go:344] failed to connect to `user=agent_control database=ferretdb`: 127.0.0.1:29499: server error: FATAL: the database system is starting up (SQLSTATE 57P03)',
      }),
    ],
    [
      'a wait for a pooled connection that ran out',
      Object.assign(new Error('Timed out while checking out a connection from connection pool'), {
        name: 'MongoWaitQueueTimeoutError',
      }),
    ],
    [
      'a network error as the cause of another',
      new Error('lookup failed', { cause: new MongoNetworkError('connection 1 to x:1 closed') }),
    ],
  ];
  it.each(unreachable)('%s is a 503', (_what, e) => {
    expect(isDatabaseUnreachable(e)).toBe(true);
    const t = translateStoreError(e);
    expect(t).toBeInstanceOf(Unavailable);
    expect((t as Unavailable).retryAfterSeconds).toBe(5);
  });

  it("a socket's bare EPIPE after the server closed it (the driver lets it escape unwrapped) is a 503", async () => {
    const server = net.createServer((socket) => socket.end());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const client = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
      client.on('error', () => undefined);
      await new Promise((resolve) => client.once('end', resolve));
      const refused = await new Promise<Error | null | undefined>((resolve) => client.write('command', resolve));
      expect((refused as NodeJS.ErrnoException).code).toBe('EPIPE');
      expect(isDatabaseUnreachable(refused)).toBe(true);
      expect(translateStoreError(refused)).toBeInstanceOf(Unavailable);
      client.destroy();
    } finally {
      server.close();
    }
  });

  const other: [string, unknown][] = [
    [
      'a duplicate key in a bulk write',
      new MongoBulkWriteError(
        { message: 'E11000 duplicate key error', code: 11000, writeErrors: [{ index: 0, code: 11000 }] } as never,
        {} as never,
      ),
    ],
    [
      "FerretDB's internal error about something else",
      new MongoServerError({ code: 1, errmsg: 'unsupported operator $foo' }),
    ],
    ['a validation error of the server', new MongoServerError({ code: 121, errmsg: 'Document failed validation' })],
    ['a plain bug', new TypeError('x is undefined')],
    ['a file that is not there', Object.assign(new Error('ENOENT: no such file'), { code: 'ENOENT' })],
  ];
  it.each(other)('%s passes through unchanged', (_what, e) => {
    expect(isDatabaseUnreachable(e)).toBe(false);
    expect(translateStoreError(e)).toBe(e);
  });
});

describe('a read with a time budget', () => {
  const failing = (e: unknown) => withinBudget('events range', 1, () => Promise.reject(e));
  it.each([
    [
      'MaxTimeMSExpired',
      new MongoServerError({ code: 50, codeName: 'MaxTimeMSExpired', errmsg: 'operation exceeded time limit' }),
    ],
    // FerretDB ends the cursor with the command's maxTimeMS: the getMore after it finds none (seen in CI).
    [
      'a cursor its budget ended (CursorNotFound)',
      new MongoServerError({ code: 43, errmsg: 'cursor id 3679861964 not found' }),
    ],
  ])('%s is a DatabaseBusyError (503, retry shortly)', async (_what, e) => {
    await expect(failing(e)).rejects.toBeInstanceOf(DatabaseBusyError);
  });

  it('any other server error passes through unchanged', async () => {
    const e = new MongoServerError({ code: 2, errmsg: 'bad value' });
    await expect(failing(e)).rejects.toBe(e);
  });
});
