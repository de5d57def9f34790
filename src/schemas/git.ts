/**
 * A workspace's git views, as the agent server publishes them (GitChange, GitDiff): served by the
 * runtime and passed on by the control plane's conversation routes.
 */
import { z } from 'zod';

export const GIT_CHANGE_STATUSES = ['MOVED', 'ADDED', 'DELETED', 'UPDATED'] as const;
export type GitChangeStatus = (typeof GIT_CHANGE_STATUSES)[number];

export const GitChangeSchema = z
  .object({
    status: z.enum(GIT_CHANGE_STATUSES),
    path: z.string().meta({ description: 'Relative to the repository root (the new path of a moved file).' }),
  })
  .meta({ id: 'GitChange' });
export type GitChange = z.output<typeof GitChangeSchema>;

export const GitDiffSchema = z
  .object({
    modified: z.string().nullable().meta({ description: 'The current content; null when the file is deleted.' }),
    original: z.string().nullable().meta({ description: 'The content at the ref; null when the file is not there.' }),
  })
  .meta({ id: 'GitDiff' });
export type GitDiff = z.output<typeof GitDiffSchema>;
