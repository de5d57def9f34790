/**
 * Programs the project needs from the machine (iptables for isolated sandboxes, Docker's engine and
 * docker-compose for the docker tests, debootstrap for their base image): found on PATH, or, as root on
 * a Debian-like machine, installed from its packages, as the project builds its own servers.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { promisify } from 'node:util';

const run = promisify(execFile);

export async function hasCommand(cmd: string): Promise<boolean> {
  return (await run('sh', ['-c', `command -v ${cmd}`]).catch(() => ({ stdout: '' }))).stdout.trim() !== '';
}

/** Installs Debian packages (after an `apt-get update` when the first attempt finds no lists). */
export async function aptInstall(packages: string[], say: (l: string) => void): Promise<void> {
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const install = () =>
    run('apt-get', ['install', '-y', '-q', '--no-install-recommends', ...packages], { env, maxBuffer: 64 << 20 });
  say(`installing ${packages.join(', ')} with apt-get`);
  try {
    await install();
  } catch {
    await run('apt-get', ['update', '-q'], { env, maxBuffer: 64 << 20 });
    await install();
  }
}

/**
 * Makes sure each command exists, installing its package (`{command: package}`) as root with apt-get;
 * otherwise throws naming what is missing and `why` it is needed.
 */
export async function ensureCommands(
  wanted: Record<string, string>,
  why: string,
  say: (l: string) => void,
): Promise<void> {
  const missing: string[] = [];
  for (const [cmd, pkg] of Object.entries(wanted))
    if (!(await hasCommand(cmd)) && !missing.includes(pkg)) missing.push(pkg);
  if (missing.length === 0) return;
  if (process.getuid?.() !== 0 || !fs.existsSync('/usr/bin/apt-get'))
    throw new Error(`${why} needs ${missing.join(' and ')}: install them (as root this is done for you on Debian)`);
  await aptInstall(missing, say);
}
