/**
 * The images the docker tests and benches run, built on the machine (no registry is needed):
 * - a Node base, standing in for node:20-bookworm-slim: a Debian bookworm root file system made by
 *   debootstrap (minbase, with git), this machine's node and npm, and a `node` user (uid 1000);
 * - the project's images from its Dockerfile on that base: the api/worker image and the runtime image;
 * - the Temporal dev server and FerretDB, from the binaries the project already builds.
 * Each is built only when the engine does not have it; the project's own builds go through the
 * engine's layer cache, so a run that changed no file rebuilds nothing.
 */
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { repoRoot, FERRETDB_VERSION, TEMPORAL_CLI_VERSION } from '../servers/paths';
import { aptInstall } from '../host-packages';
import type { AgentServerEnv } from '../../src/process/agent-server-env';
import { engineGet } from './engine';
import { docker } from './docker-cli';

const run = promisify(execFile);
type Say = (line: string) => void;

/** Bump when the base's recipe changes: the tag names the recipe, so an old base is not reused. */
const BASE_RECIPE = 2;
const BASE_PACKAGES = ['git', 'ca-certificates'];

export interface ProjectImages {
  /** The Node base the others are built on. */
  base: string;
  /** api and worker (the Dockerfile's default target). */
  app: string;
  /** The sandbox runtime (the Dockerfile's `runtime` target). */
  runtime: string;
}

export interface ServerImages {
  temporal: string;
  ferretdb: string;
}

async function hasImage(host: string, image: string): Promise<boolean> {
  return (await engineGet(host, `/images/${encodeURIComponent(image)}/json`)).status === 200;
}

const nodeVersion = process.versions.node;
export const nodeBaseTag = () => `agent-control/node-base:${nodeVersion}-bookworm-r${BASE_RECIPE}`;

/**
 * The Node base: debootstrap's minbase of Debian bookworm (this machine's mirror) with git, plus the node
 * binary and npm this process runs (the same Debian release's libraries, so it runs unchanged), imported
 * as an image. About 2 minutes, once per engine.
 */
export async function ensureNodeBase(host: string, say: Say = () => {}): Promise<string> {
  const tag = nodeBaseTag();
  if (await hasImage(host, tag)) return tag;
  if (process.getuid?.() !== 0)
    throw new Error(`the image ${tag} is missing, and building it (debootstrap) needs root`);
  if (!fs.existsSync('/usr/sbin/debootstrap')) await aptInstall(['debootstrap'], say);
  const started = Date.now();
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-control-node-base-'));
  try {
    say(`building ${tag}: debootstrap of Debian bookworm (about 2 minutes, once)`);
    const mirror = process.env.DEBIAN_MIRROR ?? 'http://deb.debian.org/debian';
    await run('debootstrap', ['--variant=minbase', `--include=${BASE_PACKAGES.join(',')}`, 'bookworm', root, mirror], {
      maxBuffer: 64 << 20,
    });
    const npmDir = path.resolve(path.dirname(fs.realpathSync(process.execPath)), '..', 'lib', 'node_modules', 'npm');
    if (!fs.existsSync(path.join(npmDir, 'bin', 'npm-cli.js')))
      throw new Error(`npm was not found beside node (${npmDir})`);
    fs.copyFileSync(fs.realpathSync(process.execPath), path.join(root, 'usr/local/bin/node'));
    fs.chmodSync(path.join(root, 'usr/local/bin/node'), 0o755);
    fs.cpSync(npmDir, path.join(root, 'usr/local/lib/node_modules/npm'), { recursive: true });
    fs.symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', path.join(root, 'usr/local/bin/npm'));
    fs.symlinkSync('../lib/node_modules/npm/bin/npx-cli.js', path.join(root, 'usr/local/bin/npx'));
    // The host's own certificate authorities (a TLS-inspecting proxy's, say): the build reaches the npm
    // registry the way the host does.
    const localCas = '/usr/local/share/ca-certificates';
    if (fs.existsSync(localCas)) fs.cpSync(localCas, path.join(root, localCas.slice(1)), { recursive: true });
    await run('chroot', [
      root,
      'sh',
      '-c',
      'update-ca-certificates >/dev/null && groupadd -g 1000 node && useradd -u 1000 -g node -m -s /bin/bash node && node --version && npm --version',
    ]);
    for (const d of ['var/cache/apt/archives', 'var/lib/apt/lists']) {
      for (const f of fs.readdirSync(path.join(root, d)))
        if (f.endsWith('.deb') || d.endsWith('lists'))
          fs.rmSync(path.join(root, d, f), { recursive: true, force: true });
    }
    const tar = spawn('tar', ['-C', root, '--numeric-owner', '-c', '.'], { stdio: ['ignore', 'pipe', 'inherit'] });
    await docker(
      host,
      [
        'import',
        ...['--change', 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'],
        ...['--change', 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt'],
        ...['--change', 'CMD ["node"]'],
        ...['-', tag],
      ],
      { input: tar.stdout },
    );
    say(`built ${tag} in ${Math.round((Date.now() - started) / 1000)} s`);
    return tag;
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}

/**
 * The base the project's images build on: AGENT_CONTROL_NODE_IMAGE when set; the Node base built here
 * as root; otherwise the registry's node:20-bookworm-slim, pulled when the engine lacks it.
 */
export async function ensureBaseImage(host: string, say: Say = () => {}): Promise<string> {
  const chosen = process.env.AGENT_CONTROL_NODE_IMAGE;
  if (chosen) return chosen;
  if (process.getuid?.() === 0) return ensureNodeBase(host, say);
  const slim = 'node:20-bookworm-slim';
  if (!(await hasImage(host, slim))) await docker(host, ['pull', slim]);
  return slim;
}

/** The project's images from its Dockerfile, on the Node base; the layer cache skips what did not change. */
export async function buildProjectImages(host: string, base: string, say: Say = () => {}): Promise<ProjectImages> {
  const root = repoRoot();
  const images: ProjectImages = { base, app: 'agent-control:local', runtime: 'agent-control-runtime:local' };
  const started = Date.now();
  // The build stage installs the npm dependencies: it needs the host's network to reach the registry.
  const common = [
    'build',
    '--force-rm',
    '--network=host',
    '--build-arg',
    `NODE_IMAGE=${base}`,
    '--label',
    'agent-control.test-image=1',
  ];
  await docker(host, [...common, '--target', 'runtime', '-t', images.runtime, root]);
  await docker(host, [...common, '-t', images.app, root]);
  say(`built ${images.app} and ${images.runtime} in ${Math.round((Date.now() - started) / 1000)} s`);
  return images;
}

/** The Temporal dev server and FerretDB as images (the binaries the project built, on the Node base). */
export async function buildServerImages(
  host: string,
  base: string,
  binaries: { temporal: string; ferretdb: string },
  say: Say = () => {},
): Promise<ServerImages> {
  const images: ServerImages = {
    temporal: `agent-control/temporal:${TEMPORAL_CLI_VERSION.slice(1)}`,
    ferretdb: `agent-control/ferretdb:${FERRETDB_VERSION.slice(1)}`,
  };
  for (const [name, binary, tag] of [
    ['temporal', binaries.temporal, images.temporal],
    ['ferretdb', binaries.ferretdb, images.ferretdb],
  ] as const) {
    const dockerfile = (digest: string) =>
      [
        `FROM ${base}`,
        `COPY ${name} /usr/local/bin/${name}`,
        `LABEL agent-control.binary=${digest}`,
        // Where each keeps its data (docker-compose.yml mounts a volume on the second): writable by node.
        'RUN mkdir -p /state /var/lib/temporal && chown node:node /state /var/lib/temporal',
        'USER node',
        `ENTRYPOINT ["/usr/local/bin/${name}"]`,
        '',
      ].join('\n');
    // The tag names the version; the label the binary and this recipe, so either changed makes a new image.
    const digest = createHash('sha256')
      .update(fs.readFileSync(binary))
      .update(dockerfile(''))
      .digest('hex')
      .slice(0, 16);
    const info = await engineGet(host, `/images/${encodeURIComponent(tag)}/json`);
    if (
      info.status === 200 &&
      (JSON.parse(info.body) as { Config?: { Labels?: Record<string, string> } }).Config?.Labels?.[
        'agent-control.binary'
      ] === digest
    )
      continue;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), `agent-control-${name}-image-`));
    try {
      fs.copyFileSync(binary, path.join(dir, name));
      fs.writeFileSync(path.join(dir, 'Dockerfile'), dockerfile(digest));
      await docker(host, ['build', '--force-rm', '-t', tag, dir]);
      say(`built ${tag}`);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
  return images;
}

/** What the agent server's interpreter needs of Debian beyond the base (its copied standard library's modules), and tmux, which its terminal prefers. */
const OPENHANDS_PACKAGES = [
  'libsqlite3-0',
  'libreadline8',
  'libncursesw6',
  'libgdbm6',
  'libbz2-1.0',
  'liblzma5',
  'libuuid1',
  'tmux',
];
/** Bump when the image's recipe changes. */
const OPENHANDS_RECIPE = 2;

/**
 * The real OpenHands agent server as a sandbox image, on the Node base: the environment the project
 * installed from runtimes/openhands/requirements.lock (scripts/servers/agent-server.ts), copied in whole,
 * root's and read-only, run as the base's `node` user. Its command starts the server on RUNTIME_PORT on
 * every address of the container; the docker provider adds the session key, the webhook and the state
 * paths. Only a self-contained environment (a copied interpreter, `libDir` set) can go into an image.
 */
export async function buildOpenHandsImage(
  host: string,
  base: string,
  env: AgentServerEnv,
  say: Say = () => {},
): Promise<string> {
  if (!env.libDir)
    throw new Error(
      `the agent server in ${env.dir} is a virtual environment of this machine's Python; an image needs a self-contained one (install it with a pyenv or python.org Python: AGENT_SERVER_PYTHON)`,
    );
  const tag = `agent-control-openhands:${env.version}-${createHash('sha256').update(path.basename(env.dir)).update(base).update(String(OPENHANDS_RECIPE)).digest('hex').slice(0, 12)}`;
  if (await hasImage(host, tag)) return tag;
  const started = Date.now();
  const dir = fs.mkdtempSync(path.join(path.dirname(env.dir), '.image-'));
  try {
    // Hard links: the context is the environment itself, not a second gigabyte.
    await run('cp', ['-al', env.dir, path.join(dir, 'env')]);
    const inImage = (p: string) => path.posix.join('/opt/openhands', path.relative(env.dir, p));
    fs.writeFileSync(
      path.join(dir, 'Dockerfile'),
      [
        `FROM ${base}`,
        `RUN apt-get update && apt-get install -y --no-install-recommends ${OPENHANDS_PACKAGES.join(' ')} && rm -rf /var/lib/apt/lists/*`,
        // COPY makes it root's and keeps the install's modes (root's umask 022): readable, not writable, by node.
        'COPY env /opt/openhands',
        'RUN mkdir -p /workspace && chown node:node /workspace',
        `ENV OPENHANDS_PYTHON=${inImage(env.python)} LD_LIBRARY_PATH=${inImage(env.libDir)} LD_LIBRARY_PATH_ORIG= LITELLM_LOCAL_MODEL_COST_MAP=True OPENHANDS_SUPPRESS_BANNER=1`,
        `LABEL agent-control.openhands=${env.version}`,
        'USER node',
        'WORKDIR /workspace',
        'CMD ["/bin/sh", "-c", "exec \\"$OPENHANDS_PYTHON\\" -I -u -m openhands.agent_server --host 0.0.0.0 --port \\"${RUNTIME_PORT:-8000}\\""]',
        '',
      ].join('\n'),
    );
    say(`building ${tag}: the agent server environment on ${base} (about a minute, once)`);
    await docker(host, ['build', '--force-rm', '--network=host', '-t', tag, dir]);
    say(`built ${tag} in ${Math.round((Date.now() - started) / 1000)} s`);
    return tag;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
