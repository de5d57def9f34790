/**
 * How an isolated runtime is started as its sandbox's uid: its own mount and IPC namespaces, a /proc of
 * its own processes, its own tmp over every directory all users may write (found once, at prepare).
 */
import fs from 'node:fs';
import path from 'node:path';
import { trustedProgram } from '../../src/process/trusted-path';

/**
 * How to start `command` as the sandbox's uid (spawned by root, no uid option): in new mount and IPC
 * namespaces, it mounts a /proc with hidepid=2 (each uid sees its own processes only; per mount since
 * Linux 5.8) and binds the sandbox's tmp over the directories every user may write (/tmp, and
 * `sharedDirs`: /var/tmp, /dev/shm, /run/lock, ...), then drops to the uid with
 * no supplementary groups and no way to gain privileges (setuid programs run as the caller). The pid
 * stays the one spawned: unshare, sh and setpriv each exec the next.
 */
export function isolatedLaunch(
  uid: number,
  dir: string,
  sharedDirs: string[],
  command: string,
  args: string[],
): { command: string; args: string[] } {
  const script = [
    'set -e',
    '"$1" -t proc -o hidepid=2,nosuid,nodev,noexec proc /proc',
    // The source is named once, before /tmp changes (a sandbox directory under /tmp would resolve anew).
    '"$1" --bind "$2" /tmp',
    'mount=$1 setpriv=$3 uid=$4 shared=$5',
    'shift 5',
    'while [ "$shared" -gt 0 ]; do if [ -d "$1" ] && [ ! -L "$1" ]; then "$mount" --bind /tmp "$1"; fi; shift; shared=$((shared - 1)); done',
    // POSIX message queues of the new IPC namespace, not the host's mount of them.
    'if [ -d /dev/mqueue ]; then "$mount" -t mqueue -o nosuid,nodev,noexec mqueue /dev/mqueue; fi',
    // Files it makes are its own alone, whichever runtime it is (the agent server sets no umask).
    'umask 077',
    'exec "$setpriv" --reuid="$uid" --regid="$uid" --clear-groups --no-new-privs -- "$@"',
  ].join('\n');
  return {
    command: trustedProgram('unshare', 'util-linux'),
    args: [
      '--mount',
      '--ipc',
      '--propagation',
      'slave',
      '--',
      trustedProgram('sh', 'dash'),
      '-c',
      script,
      'sandbox-init',
      trustedProgram('mount', 'mount'),
      path.join(dir, 'tmp'),
      trustedProgram('setpriv', 'util-linux'),
      String(uid),
      String(sharedDirs.length),
      ...sharedDirs,
      command,
      ...args,
    ],
  };
}

/**
 * The directories any user may reach and write (o+wx, sticky or not), up to four levels below /, outside /tmp,
 * /proc, /sys, /dev/mqueue (its own mount per sandbox) and the sandboxes' own: what a sandbox could leave
 * files in for others, or for after its delete. Links are not followed; the walk is bounded.
 */
export async function worldWritableDirs(skip: string[]): Promise<string[]> {
  const skipped = new Set(['/tmp', '/proc', '/sys', '/dev/mqueue', ...skip]);
  const found: string[] = [];
  let budget = 50_000;
  const walk = async (dir: string, depth: number): Promise<void> => {
    const entries = await fs.promises.readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      if (!e.isDirectory() || --budget < 0) continue;
      const p = path.join(dir, e.name);
      if (skipped.has(p)) continue;
      const st = await fs.promises.lstat(p).catch(() => null);
      if (!st?.isDirectory()) continue;
      if ((st.mode & 0o001) === 0) continue; // others cannot enter it: nothing below is theirs to reach
      if ((st.mode & 0o002) !== 0) found.push(p);
      else if (depth < 4) await walk(p, depth + 1);
    }
  };
  await walk('/', 1);
  return found.sort();
}
