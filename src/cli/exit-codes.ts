/**
 * The `agent-control` CLI's exit codes, what scripts can rely on: the one list its help text and the
 * table in docs/cli-and-client.md are made from (`npm run gen:docs`; a test fails when the page drifts).
 */
const CODES = {
  OK: { code: 0, meaning: 'done' },
  UNEXPECTED: { code: 1, meaning: 'unexpected error' },
  USAGE: {
    code: 2,
    meaning: 'usage: a bad option or argument, input the service refused (400, 422), or no URL or API key configured',
  },
  AUTH: { code: 3, meaning: 'the API key was refused (401, 403)' },
  NOT_FOUND: { code: 4, meaning: 'not found (404): no such conversation, sandbox or start task' },
  CONFLICT: { code: 5, meaning: 'conflict (409)' },
  UNAVAILABLE: {
    code: 6,
    meaning:
      'the service is unreachable or unavailable (refused connection, no answer within 2 minutes, 502, 503, 504, a lost stream), ' +
      'or what answered is not the service (not JSON, over 64 MiB, a redirect, paging that does not advance)',
  },
  START_FAILED: { code: 7, meaning: 'the start ended in ERROR' },
  DETACHED: { code: 130, meaning: 'Ctrl-C: detached (a start goes on in the service)' },
} as const;

type ExitName = keyof typeof CODES;

export const EXIT = Object.fromEntries(Object.entries(CODES).map(([name, c]) => [name, c.code])) as {
  [K in ExitName]: (typeof CODES)[K]['code'];
};

/** The codes as the help lists them, each meaning wrapped under its code. */
export function exitCodesHelp(width = 100): string {
  const lines: string[] = [];
  for (const { code, meaning } of Object.values(CODES)) {
    let line = `  ${String(code).padEnd(5)}`;
    for (const word of meaning.split(' ')) {
      if (line.length + word.length + 1 > width && line.trim() !== String(code)) {
        lines.push(line.trimEnd());
        line = ' '.repeat(7);
      }
      line += (line.endsWith(' ') ? '' : ' ') + word;
    }
    lines.push(line.trimEnd());
  }
  return lines.join('\n');
}

/** The codes as the docs' table. */
export function exitCodesMarkdown(): string {
  return [
    '| exit code | meaning |',
    '| --- | --- |',
    ...Object.values(CODES).map((c) => `| ${c.code} | ${c.meaning} |`),
  ].join('\n');
}
