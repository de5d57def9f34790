/** The kinds of value an environment variable takes, each with the message a bad one gets. */
import { z } from 'zod';

export const port = (what: string, min = 1) => {
  const error = `a port number for ${what} (${min}-65535${min === 0 ? '; 0 picks a free port' : ''})`;
  return z.coerce.number({ error }).int({ error }).min(min, { error }).max(65535, { error });
};

export const positiveInt = (what: string) =>
  z.coerce
    .number({ error: `a positive integer (${what})` })
    .int({ error: `a positive integer (${what})` })
    .positive({
      error: `a positive integer (${what})`,
    });

export const nonNegativeInt = (what: string) =>
  z.coerce
    .number({ error: `a non-negative integer (${what})` })
    .int({ error: `a non-negative integer (${what})` })
    .min(0, {
      error: `a non-negative integer (${what})`,
    });

export const nonEmpty = (what: string) =>
  z
    .string()
    .trim()
    .min(1, { error: `a non-empty string (${what})` });

export const hostPort = z
  .string()
  .trim()
  .regex(/^[A-Za-z0-9_.\-[\]:]+:\d{1,5}$/, { error: 'host:port, such as 127.0.0.1:7233' });

export const mongoUri = z
  .string()
  .trim()
  .regex(/^mongodb(\+srv)?:\/\/\S+$/, {
    error: 'a MongoDB connection string starting with mongodb:// or mongodb+srv://',
  });

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export const LOG_FORMATS = ['json', 'pretty', 'auto'] as const;

/** A comma-separated list; each item trimmed, empty ones dropped; unset: empty. */
export const commaList = () =>
  z
    .string()
    .default('')
    .transform((v) =>
      v
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean),
    );
