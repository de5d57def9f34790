/**
 * Reading a conversation's workspace through its runtime: paths as the runtime takes them (none outside
 * the workspace), a file's text, and git views passed on only in their published shape.
 */
import path from 'node:path';
import type { z } from 'zod';
import { BadRequest, UpstreamFailed } from '../errors';
import type { RuntimeClient } from '../sandboxes/runtime-client';
import type { AppConversationRecord } from '../store/app-conversations-store';
import { workspaceRefusal } from './runtime-refusals';

/** Files larger than this are not read through the control plane. */
export const MAX_FILE_BYTES = 5 * 1024 * 1024;

/**
 * A path the client gave, as the runtime takes it: relative ones start at the conversation's working
 * directory. One that climbs out of the runtime's working directory is refused here; `.` goes as `./`
 * (a bare dot segment would be resolved away by the URL).
 */
export function workspacePath(c: AppConversationRecord, requested: string): string {
  if (path.posix.isAbsolute(requested)) return requested;
  const joined = path.posix.normalize(c.working_dir ? path.posix.join(c.working_dir, requested) : requested);
  if (joined === '..' || joined.startsWith('../'))
    throw new BadRequest(`path ${JSON.stringify(requested)} is outside the workspace`);
  return joined === '.' ? './' : joined;
}

/** A workspace file's text; '' when there is no such file (as the reference answers). */
export async function readWorkspaceFile(
  runtime: RuntimeClient,
  c: AppConversationRecord,
  filePath: string,
  timeoutMs: number,
): Promise<string> {
  const r = await runtime.download(workspacePath(c, filePath), MAX_FILE_BYTES, timeoutMs);
  if (r.status === 404) return '';
  if (r.status !== 200) throw workspaceRefusal(r);
  return r.body as string;
}

/** A git view of the runtime's, passed on only when it has the published shape (a runtime is not trusted). */
export async function readGitView<T>(
  runtime: RuntimeClient,
  view: 'changes' | 'diff',
  target: string,
  ref: string | undefined,
  shape: z.ZodType<T>,
  timeoutMs: number,
): Promise<T> {
  const a = await runtime.git(view, target, ref, timeoutMs);
  if (a.status !== 200) throw workspaceRefusal(a);
  const parsed = shape.safeParse(a.body);
  if (!parsed.success)
    throw new UpstreamFailed(
      `The sandbox's agent server answered the git ${view} with something else than its published shape`,
    );
  return parsed.data;
}
