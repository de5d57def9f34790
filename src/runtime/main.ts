/**
 * Runtime entry point: the agent server inside a sandbox. Configured by its environment (see
 * runtime-config.ts), which the sandbox provider sets. Stops on SIGTERM, or by itself when its sandbox
 * directory is removed (a process sandbox deleted while this process was out of reach).
 */
import fs from 'node:fs';
import pino from 'pino';
import { loadRuntimeConfig } from './runtime-config';
import { startRuntimeServer } from './server';

async function main(): Promise<void> {
  // An isolated sandbox's files (and what its commands write to /tmp) are its own: RUNTIME_UMASK=077.
  if (process.env.RUNTIME_UMASK) process.umask(parseInt(process.env.RUNTIME_UMASK, 8));
  const config = loadRuntimeConfig();
  const logger = pino({ name: 'runtime', level: process.env.LOG_LEVEL ?? 'info' });
  // One conversation's unexpected failure must not stop the others: logged, and the runtime goes on.
  process.on('unhandledRejection', (e) =>
    logger.error({ err: (e as Error)?.message ?? String(e) }, 'unhandled rejection'),
  );
  const server = await startRuntimeServer(config, logger);
  logger.info({ url: server.url, working_dir: config.workingDir }, 'runtime listening');
  // With RUNTIME_PORT=0 the system chose the port (no other process can take it first): the provider
  // reads it from this pipe, then the fd is closed so no command of the agent inherits it.
  const portFd = Number(process.env.RUNTIME_PORT_FD);
  if (Number.isInteger(portFd) && portFd > 2) {
    try {
      fs.writeSync(portFd, new URL(server.url).port);
    } catch (e) {
      logger.warn(
        { err: (e as Error).message },
        'the port could not be reported (the worker that started this runtime is gone)',
      );
    }
    fs.closeSync(portFd);
  }

  let stopping = false;
  const stop = async (why: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ why }, 'runtime stopping');
    await server.close();
    await server.conversations.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  if (config.sandboxDir) {
    const dir = config.sandboxDir;
    setInterval(() => {
      if (!fs.existsSync(dir)) void stop(`sandbox directory ${dir} was removed`);
    }, 2000).unref();
  }
}

main().catch((e: Error) => {
  console.error(e.message);
  process.exit(1);
});
