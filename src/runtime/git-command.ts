/**
 * One git command of the git views: run without a shell, with a time limit and an output limit, in an
 * environment that never looks above the working directory, with settings that keep a repository's own
 * configuration from running programs.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { GitViewError } from './git-view-errors';

/** Settings that keep a repository's configuration from running programs or printing quoted names. */
const SAFE_CONFIG = [
  '-c',
  'core.fsmonitor=false',
  '-c',
  'core.quotePath=false',
  '-c',
  'diff.external=',
  '-c',
  'core.untrackedCache=false',
];

export interface GitRun {
  code: number;
  stdout: Buffer;
  stderr: string;
}

/** Where and how long git may run: the working directory every repository lies in, and the time limit. */
export interface GitLimits {
  workingDir: string;
  timeoutMs: number;
}

/** Runs git in `cwd`; `what` names its output in the errors (too large, too slow). */
export function runGit(
  limits: GitLimits,
  cwd: string,
  args: string[],
  maxBuffer: number,
  what: string,
): Promise<GitRun> {
  const root = fs.realpathSync(limits.workingDir);
  return new Promise((resolve, reject) => {
    execFile(
      'git',
      [...SAFE_CONFIG, ...args],
      {
        cwd,
        env: gitEnv(path.dirname(root)),
        timeout: limits.timeoutMs,
        killSignal: 'SIGKILL',
        maxBuffer,
        encoding: 'buffer',
        windowsHide: true,
      },
      (err, stdout, stderr) => {
        const e = err as (NodeJS.ErrnoException & { killed?: boolean; code?: string | number }) | null;
        if (e?.code === 'ENOENT')
          return reject(new GitViewError('unavailable', 'git is not installed in this runtime'));
        if (e?.code === 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER')
          return reject(new GitViewError('too_large', `${what} is larger than the limit of ${maxBuffer} bytes`));
        if (e?.killed)
          return reject(new GitViewError('timeout', `git took longer than ${limits.timeoutMs} ms for ${what}`));
        if (e && typeof e.code !== 'number') return reject(e);
        resolve({ code: typeof e?.code === 'number' ? e.code : 0, stdout, stderr: stderr.toString('utf8') });
      },
    );
  });
}

/** git's environment: the runtime's without its session key and any GIT_* setting, never looking above the working directory. */
function gitEnv(ceiling: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (k !== 'SESSION_API_KEY' && !k.startsWith('GIT_')) env[k] = v;
  return { ...env, GIT_CEILING_DIRECTORIES: ceiling, GIT_TERMINAL_PROMPT: '0', GIT_OPTIONAL_LOCKS: '0', LC_ALL: 'C' };
}
