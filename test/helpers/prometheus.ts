/**
 * Parses /metrics with Prometheus' own text-format parser (github.com/prometheus/common/expfmt) through
 * scripts/promparse, built once from its pinned Go module into the servers' cache (keyed by its sources).
 */
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { serversCacheRoot } from '../../scripts/servers/paths';

export interface PromSample {
  labels: Record<string, string>;
  value?: number;
  count?: number;
  sum?: number;
  buckets?: { le: string; count: number }[];
}

export interface PromFamily {
  name: string;
  type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED';
  help: string;
  samples: PromSample[];
}

const source = path.resolve(__dirname, '..', '..', 'scripts', 'promparse');

const run = (cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string } = {}) =>
  new Promise<string>((resolve, reject) => {
    const child = execFile(
      cmd,
      args,
      { cwd: opts.cwd, env: opts.env, maxBuffer: 64 << 20, timeout: 300_000 },
      (err, stdout, stderr) =>
        err ? reject(new Error(`${cmd} ${args.join(' ')}: ${stderr.trim() || err.message}`)) : resolve(stdout),
    );
    child.stdin?.end(opts.input ?? '');
  });

let built: Promise<string> | undefined;

/** The promparse binary: built on first use (a few seconds once its module is downloaded), then reused. */
function binary(): Promise<string> {
  built ??= (async () => {
    const hash = crypto.createHash('sha256');
    for (const f of ['main.go', 'go.mod', 'go.sum']) hash.update(fs.readFileSync(path.join(source, f)));
    const target = path.join(
      serversCacheRoot(process.env.SERVERS_CACHE_DIR),
      `promparse-${hash.digest('hex').slice(0, 12)}`,
      'promparse',
    );
    if (fs.existsSync(target)) return target;
    fs.mkdirSync(path.dirname(target), { recursive: true });
    const work = fs.mkdtempSync(`${path.dirname(target)}/.build-`);
    try {
      await run('go', ['build', '-trimpath', '-o', path.join(work, 'promparse'), '.'], {
        cwd: source,
        env: { ...process.env, GOFLAGS: '-buildvcs=false -mod=readonly' },
      });
      fs.renameSync(path.join(work, 'promparse'), target); // atomic: another test file building at once gets the same file
    } finally {
      fs.rmSync(work, { recursive: true, force: true });
    }
    return target;
  })();
  return built;
}

/** The metric families of a scrape, by name; rejects with the parser's error when Prometheus would refuse the text. */
export async function parsePrometheus(text: string): Promise<Map<string, PromFamily>> {
  const families = JSON.parse(await run(await binary(), [], { input: text })) as PromFamily[];
  return new Map(families.map((f) => [f.name, f]));
}

/** The one sample of `family` whose labels include `labels` (undefined when none; throws when several). */
export function sampleOf(
  families: Map<string, PromFamily>,
  family: string,
  labels: Record<string, string> = {},
): PromSample | undefined {
  const found = (families.get(family)?.samples ?? []).filter((s) =>
    Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  if (found.length > 1) throw new Error(`${found.length} samples of ${family} match ${JSON.stringify(labels)}`);
  return found[0];
}
