/** Gateway process entry point: API_HOST:API_PORT relayed to GATEWAY_UPSTREAM (docker-compose.yml's front of the scaled api). */
import { ConfigError, loadConfig } from '../config';
import { createLogger } from '../logger';
import { startGateway } from './tcp-gateway';

async function main(): Promise<void> {
  const config = loadConfig();
  const upstream = config.gateway.upstream;
  if (!upstream)
    throw new ConfigError([
      'GATEWAY_UPSTREAM is required: the host:port of the api service the gateway relays to (e.g. api:8000)',
    ]);
  const logger = createLogger(config, 'gateway');
  const gateway = await startGateway({
    host: config.api.host,
    port: config.api.port,
    upstreamHost: upstream.host,
    upstreamPort: upstream.port,
    connectTimeoutMs: 5000,
    healthPath: '/health',
    maxConnections: config.gateway.maxConnections,
    onRefused: (reason) => logger.warn({ reason }, 'a connection found no api'),
    onListenerError: (err) => logger.error({ err }, 'the gateway listener failed'),
  });
  logger.info({ port: gateway.port, upstream: `${upstream.host}:${upstream.port}` }, 'gateway listening');
  const stop = (why: string) => {
    logger.info({ why }, 'gateway stopping');
    void gateway.close().then(() => process.exit(0));
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((e: Error) => {
  console.error(e instanceof ConfigError ? e.message : e);
  process.exit(1);
});
