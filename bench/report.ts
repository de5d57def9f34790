/** What every benchmark script shares: its command-line numbers, its statistics and its table. */

/** `--name N` from the command line, or the fallback. */
export const arg = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};

/** A word option (`--name value`), one of `choices`. */
export const wordArg = <T extends string>(name: string, choices: readonly T[], fallback: T): T => {
  const i = process.argv.indexOf(`--${name}`);
  const value = i > 0 ? process.argv[i + 1] : fallback;
  if (!choices.includes(value as T)) throw new Error(`--${name} must be one of ${choices.join(', ')}; got ${value}`);
  return value as T;
};

/** A progress line on stderr, so stdout holds only the table. */
export const progress = (msg: string): void =>
  console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}`);

export const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

export const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};

/** Prints a title and rows (the first is the header) as aligned columns. */
export function printTable(title: string, rows: string[][]): void {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  console.log(`\n${title}\n`);
  for (const r of rows)
    console.log(
      r
        .map((cell, c) => cell.padEnd(widths[c]!))
        .join('  ')
        .trimEnd(),
    );
}

/** Runs a benchmark's main; a failure prints and exits 1. */
export function runBench(main: () => Promise<void>): void {
  main().catch((e: unknown) => {
    console.error(e);
    process.exit(1);
  });
}
