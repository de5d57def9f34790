/**
 * Where the service finds the programs it runs, without trusting the PATH it was started with.
 * `npm run` puts the node_modules/.bin of every ancestor directory first on PATH; under a directory
 * others may write (the system's temporary directory), any local user, a sandbox among them, can plant
 * `iptables` or `git` there. So programs run as root are resolved once, to absolute paths, from the
 * system's directories only, and every runtime gets the same fixed PATH.
 *
 * A directory is trusted when it and each directory above it belong to root (or to this process's own
 * user) and no one else can write it. A sticky directory (/tmp) may sit above one that exists: others
 * cannot rename or remove what root owns in it (but could create one that does not exist yet).
 */
import fs from 'node:fs';
import path from 'node:path';

/** The system's program directories, in the order a login shell of root searches them. */
export const SYSTEM_DIRS = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'] as const;

const GROUP_OR_OTHER_WRITE = 0o022;
const STICKY = 0o1000;

const owners = () => new Set([0, process.geteuid?.() ?? 0]);

/**
 * Why another user could put a program at `file` (a directory or a program), or null when no one but
 * root (or this process's user) can. Both the path as written (each component, links not followed: a
 * link must be ours, in a directory that is ours) and where it leads are checked, so a link another user
 * may swap later is refused. A path that does not exist is trusted when no one else can create it.
 */
export function untrustedBecause(file: string): string | null {
  const written = chainUntrusted(path.resolve(file), true);
  if (written) return written;
  let real: string;
  try {
    real = fs.realpathSync(file);
  } catch {
    return null; // does not exist, and no one else could create it (checked above)
  }
  return chainUntrusted(real, false);
}

function chainUntrusted(file: string, lexical: boolean): string | null {
  const allowed = owners();
  let p = file;
  let missing = false; // whether a path below p does not exist: then p must not be writable at all
  let below = false; // whether p is an ancestor of `file`
  for (;;) {
    const st = lexical ? fs.lstatSync(p, { throwIfNoEntry: false }) : fs.statSync(p, { throwIfNoEntry: false });
    if (!st) {
      missing = true;
    } else {
      if (!allowed.has(st.uid)) return `${p} belongs to uid ${st.uid}`;
      const sticky = below && !missing && st.isDirectory() && (st.mode & STICKY) !== 0;
      // A link's own mode means nothing; who may replace it is its directory's business (the next step up).
      if (!st.isSymbolicLink() && (st.mode & GROUP_OR_OTHER_WRITE) !== 0 && !sticky)
        return `${p} is writable by others (mode ${(st.mode & 0o7777).toString(8)})`;
    }
    const parent = path.dirname(p);
    if (parent === p) return null;
    p = parent;
    below = true;
  }
}

/** The entries of a PATH value that are trusted, in order, without repeats; and those left out, with why. */
export function splitPath(value: string | undefined): { kept: string[]; dropped: { dir: string; why: string }[] } {
  const kept: string[] = [];
  const dropped: { dir: string; why: string }[] = [];
  for (const dir of (value ?? '').split(path.delimiter)) {
    if (!dir || kept.includes(dir)) continue;
    const why = path.isAbsolute(dir) ? untrustedBecause(dir) : 'a relative directory';
    if (why) dropped.push({ dir, why });
    else kept.push(dir);
  }
  return { kept, dropped };
}

let fixed: string | undefined;

/**
 * The PATH every runtime and every program the service starts gets: the trusted system directories,
 * and the directory of this Node.js when it is trusted (so `node` is found in a sandbox too).
 */
export function trustedPath(): string {
  fixed ??= splitPath([...SYSTEM_DIRS, path.dirname(process.execPath)].join(path.delimiter)).kept.join(path.delimiter);
  return fixed;
}

const resolved = new Map<string, string>();

/**
 * The absolute path of a program in the trusted system directories; the program file itself must be
 * trusted too. Throws with what to install when there is none.
 */
export function trustedProgram(name: string, install = name): string {
  const known = resolved.get(name);
  if (known) return known;
  for (const dir of trustedPath().split(path.delimiter)) {
    const file = path.join(dir, name);
    try {
      fs.accessSync(file, fs.constants.X_OK);
    } catch {
      continue;
    }
    // Checked where its links lead (iptables is a link to a multi-call program), run by the name found:
    // such programs choose what to do by the name they are called by.
    const real = fs.realpathSync(file);
    if (!fs.statSync(real).isFile() || untrustedBecause(real) || untrustedBecause(dir)) continue;
    resolved.set(name, file);
    return file;
  }
  throw new Error(
    `${name} was not found in ${trustedPath()} (a program the service runs must be there, owned by root and writable by no one else): install ${install}`,
  );
}
