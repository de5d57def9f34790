/**
 * Stand-ins for the registry images docker-compose.yml's production shape names, built here from the
 * servers the project already builds (no registry is reachable from the tests): each takes the command
 * interface compose uses of the real image, so the compose file runs unchanged on either.
 * - PostgreSQL 16 (`postgres:16`): the embedded PostgreSQL's binaries; the entrypoint makes the cluster
 *   on first start with POSTGRES_USER / POSTGRES_PASSWORD (scram-sha-256 over the network), as the
 *   official one does, and `pg_isready` answers whether the server takes connections.
 * - The Temporal server (`temporalio/server`): `temporal-server` on PATH.
 * - Temporal's admin tools (`temporalio/admin-tools`): `temporal-sql-tool` and the `temporal` CLI on PATH.
 * - The Temporal UI (`temporalio/ui`): `/home/ui-server/ui-server` started by `./start-ui-server.sh`
 *   with a configuration read from the environment (TEMPORAL_ADDRESS, TEMPORAL_UI_PORT, ...).
 * Each image is labelled with a digest of what went into it and rebuilt only when that changes.
 */
import { docker } from './docker-cli';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TEMPORAL_SERVER_VERSION, TEMPORAL_UI_VERSION } from '../servers/paths';
import { engineGet } from './engine';

export interface ProductionBinaries {
  /** The embedded PostgreSQL's `native` directory (bin, lib, share). */
  postgresNative: string;
  temporalServer: string;
  temporalSqlTool: string;
  /** The Temporal CLI (the dev server's binary): `temporal operator ...`. */
  temporalCli: string;
  temporalUi: string;
}

export interface ProductionImages {
  postgres: string;
  temporalServer: string;
  temporalAdminTools: string;
  temporalUi: string;
}

/** Answers whether PostgreSQL on 127.0.0.1:5432 takes a connection: a startup message, answered by an authentication request (not "starting up"). */
const PG_ISREADY = `#!/usr/local/bin/node
const net = require('net');
const user = Buffer.from('user\\0postgres\\0database\\0postgres\\0\\0');
const head = Buffer.alloc(8);
head.writeInt32BE(8 + user.length, 0);
head.writeInt32BE(196608, 4);
const s = net.connect(5432, '127.0.0.1');
const done = (ok) => { s.destroy(); process.exit(ok ? 0 : 1); };
s.setTimeout(3000, () => done(false));
s.on('error', () => done(false));
s.on('connect', () => s.write(Buffer.concat([head, user])));
s.once('data', (d) => done(d[0] === 0x52));
`;

const POSTGRES_ENTRYPOINT = `#!/bin/sh
# The cluster is made on the first start, owned by POSTGRES_USER with POSTGRES_PASSWORD (never on a
# command line: a file of this container's, removed at once), reached over the network with scram-sha-256.
set -eu
PGDATA="\${PGDATA:-/var/lib/postgresql/data}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  : "\${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}"
  pwfile="$(mktemp)"
  trap 'rm -f "$pwfile"' EXIT
  printf '%s' "$POSTGRES_PASSWORD" > "$pwfile"
  initdb -D "$PGDATA" -U "\${POSTGRES_USER:-postgres}" --pwfile="$pwfile" -E UTF8 --locale=C --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  echo "listen_addresses = '*'" >> "$PGDATA/postgresql.conf"
  echo "unix_socket_directories = '/tmp'" >> "$PGDATA/postgresql.conf"
fi
exec postgres -D "$PGDATA"
`;

/** The UI server's configuration from the environment, as the official image reads it (the server renders it as a template). */
const UI_CONFIG = `# enable-template
temporalGrpcAddress: {{ env "TEMPORAL_ADDRESS" | default "127.0.0.1:7233" }}
port: {{ env "TEMPORAL_UI_PORT" | default "8080" }}
enableUi: true
defaultNamespace: {{ env "TEMPORAL_DEFAULT_NAMESPACE" | default "default" }}
notifyOnNewVersion: false
refreshInterval: 0s
cors:
  cookieInsecure: {{ env "TEMPORAL_CSRF_COOKIE_INSECURE" | default "false" }}
  unsafeAllowAllOrigins: false
`;

const UI_START = `#!/bin/sh
exec ./ui-server --env docker start
`;

/** A file of the build context: copied from `from`, or written from `text`. */
type ContextFile = { from: string } | { text: string; mode?: number };

/** A digest of a file or a directory's files (names, modes, links and contents). */
function digestOf(hash: ReturnType<typeof createHash>, p: string): void {
  const st = fs.lstatSync(p);
  if (st.isSymbolicLink()) hash.update(`link ${fs.readlinkSync(p)}\n`);
  else if (st.isDirectory())
    for (const name of fs.readdirSync(p).sort()) digestOf(hash.update(`dir ${name}\n`), path.join(p, name));
  else hash.update(`file ${st.mode & 0o777} ${st.size}\n`).update(fs.readFileSync(p));
}

/** Builds `tag` from `files` and `dockerfile` unless the engine has it built from the same inputs. */
async function buildImage(
  host: string,
  tag: string,
  files: Record<string, ContextFile>,
  dockerfile: string[],
): Promise<boolean> {
  const hash = createHash('sha256').update(dockerfile.join('\n'));
  for (const [name, file] of Object.entries(files).sort(([a], [b]) => a.localeCompare(b))) {
    hash.update(`${name}\n`);
    if ('from' in file) digestOf(hash, file.from);
    else hash.update(`${file.mode ?? 0o644}\n${file.text}`);
  }
  const digest = hash.digest('hex').slice(0, 16);
  const info = await engineGet(host, `/images/${encodeURIComponent(tag)}/json`);
  if (
    info.status === 200 &&
    (JSON.parse(info.body) as { Config?: { Labels?: Record<string, string> } }).Config?.Labels?.[
      'agent-control.inputs'
    ] === digest
  )
    return false;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-control-image-'));
  try {
    for (const [name, file] of Object.entries(files)) {
      const target = path.join(dir, name);
      if ('from' in file) fs.cpSync(file.from, target, { recursive: true, verbatimSymlinks: true });
      else fs.writeFileSync(target, file.text, { mode: file.mode ?? 0o644 });
    }
    fs.writeFileSync(
      path.join(dir, 'Dockerfile'),
      [...dockerfile, `LABEL agent-control.inputs=${digest} agent-control.test-image=1`, ''].join('\n'),
    );
    await docker(host, ['build', '--force-rm', '-t', tag, dir]);
    return true;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The four stand-ins on the Node base (a Debian root with a `node` user); about 20 s each the first time. */
export async function buildProductionImages(
  host: string,
  base: string,
  b: ProductionBinaries,
  say: (l: string) => void = () => {},
): Promise<ProductionImages> {
  const server = TEMPORAL_SERVER_VERSION.slice(1);
  const images: ProductionImages = {
    postgres: 'agent-control/postgres:16',
    temporalServer: `agent-control/temporal-server:${server}`,
    temporalAdminTools: `agent-control/temporal-admin-tools:${server}`,
    temporalUi: `agent-control/temporal-ui:${TEMPORAL_UI_VERSION.slice(1)}`,
  };
  const started = Date.now();
  // The base by what it is, not its tag: a base built again makes the stand-ins again.
  const baseInfo = await engineGet(host, `/images/${encodeURIComponent(base)}/json`);
  if (baseInfo.status !== 200) throw new Error(`the base image ${base} is missing`);
  const from = [`FROM ${base}`, `# base ${(JSON.parse(baseInfo.body) as { Id: string }).Id}`];
  // One build at a time: each sends its context (up to 150 MB) to the engine.
  const recipes: [string, Record<string, ContextFile>, string[]][] = [
    [
      images.postgres,
      {
        native: { from: b.postgresNative },
        pg_isready: { text: PG_ISREADY, mode: 0o755 },
        'docker-entrypoint.sh': { text: POSTGRES_ENTRYPOINT, mode: 0o755 },
      },
      [
        ...from,
        'COPY native /usr/lib/postgresql/16',
        'COPY pg_isready docker-entrypoint.sh /usr/local/bin/',
        'ENV PATH=/usr/lib/postgresql/16/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin PGDATA=/var/lib/postgresql/data',
        'RUN mkdir -p /var/lib/postgresql/data && chown -R node:node /var/lib/postgresql && chmod 700 /var/lib/postgresql/data',
        'USER node',
        'EXPOSE 5432',
        'ENTRYPOINT ["docker-entrypoint.sh"]',
      ],
    ],
    [
      images.temporalServer,
      { 'temporal-server': { from: b.temporalServer } },
      [
        ...from,
        'COPY temporal-server /usr/local/bin/',
        'WORKDIR /etc/temporal',
        'USER node',
        'ENTRYPOINT ["temporal-server", "start"]',
      ],
    ],
    [
      images.temporalAdminTools,
      { 'temporal-sql-tool': { from: b.temporalSqlTool }, temporal: { from: b.temporalCli } },
      [...from, 'COPY temporal-sql-tool temporal /usr/local/bin/', 'USER node', 'CMD ["tail", "-f", "/dev/null"]'],
    ],
    [
      images.temporalUi,
      {
        'ui-server': { from: b.temporalUi },
        'docker.yaml': { text: UI_CONFIG },
        'start-ui-server.sh': { text: UI_START, mode: 0o755 },
      },
      [
        ...from,
        'WORKDIR /home/ui-server',
        'COPY ui-server start-ui-server.sh ./',
        'COPY docker.yaml ./config/docker.yaml',
        'USER node',
        'EXPOSE 8080',
        'ENTRYPOINT ["./start-ui-server.sh"]',
      ],
    ],
  ];
  const built: string[] = [];
  for (const [tag, files, dockerfile] of recipes) if (await buildImage(host, tag, files, dockerfile)) built.push(tag);
  if (built.length) say(`built ${built.join(', ')} in ${Math.round((Date.now() - started) / 1000)} s`);
  return images;
}
