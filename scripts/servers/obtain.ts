/**
 * Builds the Temporal CLI and FerretDB from their pinned Go modules into the cache, once per version.
 * Run directly (`node dist/scripts/servers/obtain.js`) it builds what is missing and prints both paths.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  FERRETDB_MODULE,
  FERRETDB_VERSION,
  TEMPORAL_CLI_MODULE,
  TEMPORAL_CLI_VERSION,
  TEMPORAL_SERVER_MODULE,
  TEMPORAL_SERVER_VERSION,
  TEMPORAL_UI_MODULE,
  TEMPORAL_UI_VERSION,
  ferretdbBinaryPath,
  repoRoot,
  serversCacheRoot,
  temporalBinaryPath,
  temporalServerDir,
  temporalUiBinaryPath,
} from './paths';

export interface ServerBinaries {
  temporal: string;
  ferretdb: string;
}

type Say = (line: string) => void;

function run(cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', (e: NodeJS.ErrnoException) =>
      reject(
        e.code === 'ENOENT'
          ? new Error(`\`${cmd}\` was not found on PATH; Go 1.24 or newer is needed to build the servers`)
          : e,
      ),
    );
    child.on('close', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`${cmd} ${args.join(' ')} failed (exit ${code}):\n${err.trim()}`)),
    );
  });
}

/** Builds into a private directory next to the target and renames, so concurrent builds never clash. */
async function buildInto(target: string, build: (outDir: string) => Promise<void>): Promise<void> {
  fs.mkdirSync(path.dirname(target), { recursive: true });
  const work = fs.mkdtempSync(`${path.dirname(target)}/.build-`);
  try {
    await build(work);
    fs.renameSync(path.join(work, path.basename(target)), target);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

async function buildTemporal(target: string, say: Say): Promise<void> {
  say(`building the Temporal CLI ${TEMPORAL_CLI_VERSION} with go install (a few minutes, once)`);
  await buildInto(target, async (work) => {
    await run('go', ['install', `${TEMPORAL_CLI_MODULE}/cmd/temporal@${TEMPORAL_CLI_VERSION}`], {
      env: { ...process.env, GOBIN: work, GOFLAGS: '-buildvcs=false' },
    });
  });
}

/**
 * FerretDB panics at start when built as a dependency or with plain `go install` (its version file is
 * generated; FerretDB issue 2982). The module is downloaded through scripts/ferretdb, whose committed
 * go.sum pins its checksum, copied to a writable directory with build/version/version.txt written, and
 * built there.
 */
async function buildFerretdb(target: string, say: Say): Promise<void> {
  say(`building FerretDB ${FERRETDB_VERSION} from its Go module (a minute or two, once)`);
  const pinModule = path.join(repoRoot(), 'scripts', 'ferretdb');
  const info = JSON.parse(
    await run('go', ['mod', 'download', '-json', `${FERRETDB_MODULE}@${FERRETDB_VERSION}`], { cwd: pinModule }),
  ) as { Dir?: string; Error?: string };
  if (!info.Dir) throw new Error(`go mod download ${FERRETDB_MODULE}@${FERRETDB_VERSION}: ${info.Error ?? 'no Dir'}`);
  await buildInto(target, async (work) => {
    const src = path.join(work, 'src');
    fs.cpSync(info.Dir!, src, { recursive: true });
    await run('chmod', ['-R', 'u+w', src]);
    fs.writeFileSync(path.join(src, 'build', 'version', 'version.txt'), `${FERRETDB_VERSION}\n`);
    await run('go', ['build', '-trimpath', '-o', path.join(work, 'ferretdb'), './cmd/ferretdb'], {
      cwd: src,
      env: { ...process.env, GOFLAGS: '-buildvcs=false -mod=readonly' },
    });
  });
}

/** The real Temporal server (`cmd/server`) and its schema tool (`cmd/tools/sql`). */
export interface TemporalServerBinaries {
  server: string;
  sqlTool: string;
}

/**
 * Builds the real Temporal server and its schema tool from their pinned module, once per version (about
 * 3 minutes of CPU on 2 cores; most of the module graph is the CLI's, already in Go's module cache).
 * Built into a scratch directory and renamed whole, so a build killed half-way leaves nothing behind.
 */
export async function obtainTemporalServer(
  cacheOverride?: string,
  say: Say = () => {},
): Promise<TemporalServerBinaries> {
  const dir = temporalServerDir(serversCacheRoot(cacheOverride));
  const binaries = { server: path.join(dir, 'temporal-server'), sqlTool: path.join(dir, 'temporal-sql-tool') };
  if (fs.existsSync(binaries.server) && fs.existsSync(binaries.sqlTool)) return binaries;
  say(
    `building the Temporal server ${TEMPORAL_SERVER_VERSION} and its schema tool with go install (a few minutes, once)`,
  );
  const t0 = Date.now();
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  const work = fs.mkdtempSync(`${path.dirname(dir)}/.build-`);
  try {
    const out = path.join(work, 'bin');
    await run(
      'go',
      [
        'install',
        `${TEMPORAL_SERVER_MODULE}/cmd/server@${TEMPORAL_SERVER_VERSION}`,
        `${TEMPORAL_SERVER_MODULE}/cmd/tools/sql@${TEMPORAL_SERVER_VERSION}`,
      ],
      {
        env: { ...process.env, GOBIN: out, GOFLAGS: '-buildvcs=false' },
      },
    );
    fs.renameSync(path.join(out, 'server'), path.join(out, 'temporal-server'));
    fs.renameSync(path.join(out, 'sql'), path.join(out, 'temporal-sql-tool'));
    fs.rmSync(dir, { recursive: true, force: true }); // what a build that lost a race left
    fs.renameSync(out, dir);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  say(
    `Temporal server built in ${((Date.now() - t0) / 1000).toFixed(0)} s (${(fs.statSync(binaries.server).size / 1e6).toFixed(1)} MB)`,
  );
  return binaries;
}

/** The Temporal web UI's server (`ui-server/v2/cmd/server`, its assets inside), built once per version. */
export async function obtainTemporalUi(cacheOverride?: string, say: Say = () => {}): Promise<string> {
  const target = temporalUiBinaryPath(serversCacheRoot(cacheOverride));
  if (fs.existsSync(target)) return target;
  say(`building the Temporal UI server ${TEMPORAL_UI_VERSION} with go install (a minute, once)`);
  const t0 = Date.now();
  await buildInto(target, async (work) => {
    await run('go', ['install', `${TEMPORAL_UI_MODULE}/cmd/server@${TEMPORAL_UI_VERSION}`], {
      env: { ...process.env, GOBIN: work, GOFLAGS: '-buildvcs=false' },
    });
    fs.renameSync(path.join(work, 'server'), path.join(work, path.basename(target)));
  });
  say(
    `Temporal UI server built in ${((Date.now() - t0) / 1000).toFixed(0)} s (${(fs.statSync(target).size / 1e6).toFixed(1)} MB)`,
  );
  return target;
}

/** Returns both binaries, building whichever is not cached yet. */
export async function obtainServers(cacheOverride?: string, say: Say = () => {}): Promise<ServerBinaries> {
  const root = serversCacheRoot(cacheOverride);
  const temporal = temporalBinaryPath(root);
  const ferretdb = ferretdbBinaryPath(root);
  const started = Date.now();
  // Sequential on purpose: two Go builds at once on a 2-core machine are slower than one after the other.
  const timed = async (name: string, target: string, build: (t: string, s: Say) => Promise<void>) => {
    const t0 = Date.now();
    await build(target, say);
    say(
      `${name} built in ${((Date.now() - t0) / 1000).toFixed(0)} s (${(fs.statSync(target).size / 1e6).toFixed(1)} MB)`,
    );
  };
  if (!fs.existsSync(temporal)) await timed('Temporal CLI', temporal, buildTemporal);
  if (!fs.existsSync(ferretdb)) await timed('FerretDB', ferretdb, buildFerretdb);
  const took = Date.now() - started;
  if (took > 1000) say(`servers built in ${(took / 1000).toFixed(0)}s into ${root}`);
  return { temporal, ferretdb };
}

if (require.main === module) {
  obtainServers(process.env.SERVERS_CACHE_DIR, (l) => console.error(l)).then(
    (b) => console.log(JSON.stringify(b)),
    (e: Error) => {
      console.error(e.message);
      process.exit(1);
    },
  );
}
