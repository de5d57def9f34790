/** Api process entry point. */
import { ConfigError, loadConfig, requireServers } from '../config';
import { createLogger } from '../logger';
import { exitWithParent } from '../process/parent-watch';
import { installTracing } from '../observability/tracing';
import { startApiServer } from './server';

async function main(): Promise<void> {
  const config = loadConfig();
  const servers = requireServers(config);
  const logger = createLogger(config, 'api');
  const tracing = installTracing(config.tracing, 'agent-control-api');
  const api = await startApiServer(config, servers, logger);
  logger.info({ url: api.url }, 'api listening');

  let stopping = false;
  const stop = (why: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ why }, 'api stopping');
    api.close().then(
      () => tracing.shutdown().finally(() => process.exit(0)),
      (e: unknown) => {
        logger.error({ err: e }, 'api did not stop cleanly');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  exitWithParent(() => stop('launcher exited'));
}

main().catch((e: Error) => {
  console.error(e instanceof ConfigError ? e.message : e);
  process.exit(1);
});
