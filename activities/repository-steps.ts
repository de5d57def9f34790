/**
 * What the start runs in a sandbox to prepare a repository, as shell commands and parsers of their
 * output (pure, so they are tested without a sandbox). The neutral paths inside a repository:
 *   .agents/setup.sh        run once per start, with a timeout; a failure stops the start
 *   .agents/pre-commit.sh   installed as the git pre-commit hook (an existing hook is kept as pre-commit.local)
 *   .agents/skills/*.md     skills of the repository (front matter: name, triggers)
 */
import type { RuntimeSkill } from '../src/sandboxes/runtime-client';

export const SETUP_SCRIPT = '.agents/setup.sh';
export const PRE_COMMIT_SCRIPT = '.agents/pre-commit.sh';
export const SKILLS_DIR = '.agents/skills';

/** Single-quoted for bash. */
export const sh = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** The directory a repository is cloned into, in the sandbox's working directory; `project` without one. */
export function repositoryDir(repository: string | undefined): string {
  if (!repository) return 'project';
  const base = repository
    .replace(/\/+$/, '')
    .split(/[/:]/)
    .pop()!
    .replace(/\.git$/, '');
  return /^[A-Za-z0-9._-]+$/.test(base) && base !== '.' && base !== '..' ? base : 'repository';
}

/** Where to clone from: a URL or a path as given; `owner/repo` on the git host's base URL. */
export function cloneUrl(repository: string, baseUrl: string): string {
  const isUrl = /^[a-z][a-z0-9+.-]*:\/\//i.test(repository) || /^[^/]+@[^/]+:/.test(repository);
  const isPath = repository.startsWith('/') || repository.startsWith('./') || repository.startsWith('../');
  return isUrl || isPath ? repository : `${baseUrl.replace(/\/+$/, '')}/${repository.replace(/^\/+/, '')}.git`;
}

/** The prefix of the file a start writes a git token to, in the sandbox's working directory, for one clone. */
export const CREDENTIAL_FILE_PREFIX = '.agent-control-credential-';

/**
 * Git's credential helper for one command: it answers the token read from $AGENT_CONTROL_CREDENTIAL_FILE
 * (as x-access-token, the user name git hosts take with a token), and only for `get`. The token is never
 * on a command line (another uid could read /proc/<pid>/cmdline) nor in the repository's config.
 */
const CREDENTIAL_HELPER = `!f() { test "$1" = get || exit 0; printf 'username=x-access-token\\npassword=%s\\n' "$(cat "$AGENT_CONTROL_CREDENTIAL_FILE")"; }; f`;

/**
 * The clone (or, without a repository, an empty git workspace). It clones beside the target and moves it
 * into place, so a retry after a crash finds either a whole clone or none. With `credentialFile` (a file
 * in the working directory that holds the token), git asks the helper above for it and the file is
 * removed when the command ends, whatever the outcome.
 */
export function cloneCommand(
  dir: string,
  url: string | null,
  branch: string | undefined,
  credentialFile?: string,
): string {
  // Made aside and moved into place (rename is atomic): starts running at once in one sandbox each find
  // either no repository or a whole one (two git inits in one directory fail on each other's files).
  if (!url)
    return `mkdir -p ${sh(dir)} && cd ${sh(dir)} && { [ -d .git ] || { t=$(mktemp -d .git-init.XXXXXX) && git init -q "$t" && { mv -T "$t/.git" .git 2>/dev/null || true; } && rm -rf "$t" && [ -d .git ]; }; }`;
  const b = branch ? `--branch ${sh(branch)} ` : '';
  const tmp = `${dir}.cloning`;
  const credential = credentialFile
    ? `export AGENT_CONTROL_CREDENTIAL_FILE="$PWD"/${sh(credentialFile)}; trap 'rm -f -- "$AGENT_CONTROL_CREDENTIAL_FILE"' EXIT; `
    : '';
  // Only for the clone's own host (a redirect or a rewritten URL to another host gets nothing).
  const helper = credentialFile
    ? `-c credential.helper= -c ${sh(`credential.${new URL(url).origin}.helper=${CREDENTIAL_HELPER}`)} `
    : '';
  return (
    credential +
    `if [ -d ${sh(`${dir}/.git`)} ]; then echo 'already cloned'; else ` +
    `rm -rf ${sh(tmp)} && GIT_TERMINAL_PROMPT=0 git ${helper}clone -q ${b}-- ${sh(url)} ${sh(tmp)} && ` +
    `rm -rf ${sh(dir)} && mv ${sh(tmp)} ${sh(dir)}; fi`
  );
}

/** The setup script, one run at a time (a retry after a crash waits for a run that is still going). */
export const SETUP_COMMAND = `if command -v flock >/dev/null 2>&1; then exec 9>"$(git rev-parse --git-dir)/agent-control-setup.lock" && flock 9; fi; bash ${SETUP_SCRIPT} 2>&1`;

/** Installs the repository's pre-commit script as the hook, keeping a hook that was there as pre-commit.local. */
export const HOOK_COMMAND = `set -e
[ -f ${PRE_COMMIT_SCRIPT} ] || { echo 'no hook'; exit 0; }
hooks=$(git rev-parse --git-path hooks)
mkdir -p "$hooks"
if [ -f "$hooks/pre-commit" ] && ! grep -q 'agent-control pre-commit' "$hooks/pre-commit"; then mv "$hooks/pre-commit" "$hooks/pre-commit.local"; fi
cat > "$hooks/pre-commit" <<'HOOK'
#!/bin/sh
# agent-control pre-commit: the hook that was here before (pre-commit.local), then ${PRE_COMMIT_SCRIPT}
hooks=$(git rev-parse --git-path hooks)
if [ -x "$hooks/pre-commit.local" ]; then "$hooks/pre-commit.local" "$@" || exit $?; fi
exec bash ${PRE_COMMIT_SCRIPT} "$@"
HOOK
chmod +x "$hooks/pre-commit"
echo installed`;

/** Prints every skill file of a folder, each as RS path US content. */
export const skillFilesCommand = (dir: string) =>
  `for f in ${sh(dir)}/*.md; do [ -f "$f" ] || continue; printf '\\036%s\\037' "$f"; cat "$f"; done`;

export type { RuntimeSkill };

/** Skills from the output of skillFilesCommand: name and triggers from a front matter, else the file name and none. */
export function parseSkillFiles(output: string): RuntimeSkill[] {
  return output
    .split('\x1e')
    .filter((part) => part.includes('\x1f'))
    .map((part) => {
      const [file, text] = part.split('\x1f') as [string, string];
      let name = file.split('/').pop()!.replace(/\.md$/, '');
      let triggers: string[] = [];
      let content = text;
      const front = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?/.exec(text);
      if (front) {
        content = text.slice(front[0].length);
        for (const line of front[1]!.split(/\r?\n/)) {
          const [key, ...rest] = line.split(':');
          const value = rest.join(':').trim();
          if (key?.trim() === 'name' && value) name = value;
          if (key?.trim() === 'triggers')
            triggers = value
              .replace(/^\[|\]$/g, '')
              .split(',')
              .map((t) => t.trim().replace(/^["']|["']$/g, ''))
              .filter(Boolean);
        }
      }
      return { name, content: content.trim(), triggers };
    });
}

/** The last lines of an output, for an error detail a person can read. */
export const lastLines = (output: string, n = 20) => output.trimEnd().split('\n').slice(-n).join('\n');
