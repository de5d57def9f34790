import pino, { type Logger } from 'pino';
import pretty from 'pino-pretty';
import type { Config } from './config';

export type { Logger } from 'pino';

/** JSON lines in production; colourised single lines for a person at a terminal. */
export function createLogger(config: Pick<Config, 'log'>, name: string): Logger {
  const options = { name, level: config.log.level, base: { pid: process.pid } };
  if (config.log.format === 'pretty') {
    return pino(options, pretty({ sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' }));
  }
  return pino(options);
}
