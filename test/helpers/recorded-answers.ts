/**
 * The answers (and log lines) a test file keeps so that its last test can grep them for secrets that
 * must never show (tokens, keys): the arrays they are kept in, the ways of keeping them (an answer checked
 * against a published schema, a published client whose every answer is kept, a logger whose every line
 * is kept), and that final check. Each file that records makes its own with recordAnswers() and ends
 * with a test calling expectNoSecret, so every answer of every file is grepped.
 */
import pino from 'pino';
import type { Logger } from '../../src/logger';
import { publishedClient } from './published-client';

/** The errors of a value against a published component schema (none: it decodes as published). */
export type SchemaErrors = (schema: string, value: unknown) => string[];

export interface RecordedAnswers {
  /** Every answer kept, as text. */
  readonly answers: string[];
  /** Every line written to logger(). */
  readonly logs: string[];
  /** Keeps answers (their text) for the final grep. */
  keep(...texts: string[]): void;
  /** An answer decodes as the published schema says (no errors), and is kept for the final grep. */
  decodes(schema: string, value: unknown): void;
  /** A published client for `apiKey` whose every answer (its body's text) is kept. */
  client(baseUrl: string, apiKey: string): ReturnType<typeof publishedClient>;
  /** A logger at debug level whose every line is kept. */
  logger(): Logger;
  /**
   * The final check: more than `moreThan.answers` answers (and `moreThan.logs` log lines, when given)
   * were kept, and none of `secrets` is in any of them.
   */
  expectNoSecret(secrets: readonly string[], moreThan: { answers: number; logs?: number }): void;
}

/** A fresh record; `conforms` checks the answers given to decodes. */
export function recordAnswers(conforms?: SchemaErrors): RecordedAnswers {
  const answers: string[] = [];
  const logs: string[] = [];
  return {
    answers,
    logs,
    keep: (...texts) => void answers.push(...texts),
    decodes(schema, value) {
      if (!conforms) throw new Error('recordAnswers was given no schema validator');
      answers.push(JSON.stringify(value));
      expect({ schema, errors: conforms(schema, value) }).toEqual({ schema, errors: [] });
    },
    client(baseUrl, apiKey) {
      const client = publishedClient(baseUrl, apiKey);
      client.use({
        onResponse: async ({ response }) => {
          answers.push(await response.clone().text());
        },
      });
      return client;
    },
    logger: () => pino({ level: 'debug' }, { write: (line: string) => void logs.push(line) }),
    expectNoSecret(secrets, moreThan) {
      expect(answers.length).toBeGreaterThan(moreThan.answers);
      if (moreThan.logs !== undefined) expect(logs.length).toBeGreaterThan(moreThan.logs);
      for (const secret of secrets) {
        expect(answers.filter((a) => a.includes(secret))).toEqual([]);
        expect(logs.filter((l) => l.includes(secret))).toEqual([]);
      }
    },
  };
}
