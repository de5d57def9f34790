/**
 * file_editor: view a file (numbered lines) or a directory (two levels), create a file, replace a string
 * that occurs exactly once, insert text after a line. Paths are relative to the workspace (or absolute
 * inside it); anything outside is refused.
 */
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { PathEscapeError, resolveInside } from '../../workspace-paths';
import { defineTool, type ToolResult } from './tool';

const MAX_VIEW_BYTES = 256 * 1024;

const numbered = (text: string, first: number) =>
  text
    .split('\n')
    .map((line, i) => `${String(first + i).padStart(6)}\t${line}`)
    .join('\n');

function listDir(dir: string, root: string, depth: number): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    if (entry.name.startsWith('.')) continue;
    const full = path.join(dir, entry.name);
    out.push(`${path.relative(root, full)}${entry.isDirectory() ? '/' : ''}`);
    if (entry.isDirectory() && depth > 1) out.push(...listDir(full, root, depth - 1));
  }
  return out;
}

const fail = (text: string): ToolResult => ({ text, isError: true });

const params = z.strictObject({
  command: z.enum(['view', 'create', 'str_replace', 'insert']),
  path: z.string().min(1).describe('File or directory, relative to the workspace.'),
  file_text: z.string().optional().describe('Content for create.'),
  old_str: z.string().optional().describe('Text to replace (str_replace); must occur exactly once.'),
  new_str: z.string().optional().describe('Replacement (str_replace) or text to insert (insert).'),
  insert_line: z.number().int().min(0).optional().describe('Insert after this line (insert).'),
  view_range: z
    .array(z.number().int())
    .length(2)
    .optional()
    .describe('[first, last] lines to view; last -1 = to the end.'),
});

type FileEditorArgs = z.output<typeof params>;

/** What a command acts on: the path inside the workspace, as the LLM is shown it, and what is there now. */
interface Target {
  target: string;
  shown: string;
  stat: fs.Stats | undefined;
  base: { command: FileEditorArgs['command']; path: string };
}

export const fileEditorTool = defineTool({
  name: 'file_editor',
  description:
    'View, create and edit files in the workspace. `view` shows a file with line numbers (optionally a view_range [start, end]) ' +
    'or lists a directory; `create` writes file_text to a new or existing file; `str_replace` replaces old_str, which must occur ' +
    'exactly once, with new_str; `insert` inserts new_str after line insert_line (0 = at the top).',
  params,
  actionKind: 'FileEditorAction',
  observationKind: 'FileEditorObservation',
  async run(args, ctx) {
    let target: string;
    try {
      target = resolveInside(ctx.workspace, args.path);
    } catch (e) {
      if (e instanceof PathEscapeError) return fail(`${e.message}; use a path inside the workspace`);
      throw e;
    }
    const shown = path.relative(ctx.workspace, target) || '.';
    const stat = fs.statSync(target, { throwIfNoEntry: false });
    const at: Target = { target, shown, stat, base: { command: args.command, path: shown } };
    switch (args.command) {
      case 'view':
        return view(args, at, ctx.workspace);
      case 'create':
        return create(args, at);
      case 'str_replace':
        return replaceOnce(args, at);
      case 'insert':
        return insertAfterLine(args, at);
    }
  },
});

function view(args: FileEditorArgs, { target, shown, stat, base }: Target, workspace: string): ToolResult {
  if (!stat) return fail(`${shown} does not exist`);
  if (stat.isDirectory()) {
    const entries = listDir(target, workspace, 2);
    return {
      text: `Files and directories in ${shown} (two levels, hidden ones left out):\n${entries.join('\n')}`,
      isError: false,
      fields: base,
    };
  }
  if (!stat.isFile()) return fail(`${shown} is not a regular file`); // a FIFO would block the runtime
  if (stat.size > MAX_VIEW_BYTES)
    return fail(`${shown} has ${stat.size} bytes; view a range of it with view_range, or use the terminal`);
  const lines = fs.readFileSync(target, 'utf8').split('\n');
  const [from = 1, to = -1] = args.view_range ?? [];
  if (from < 1 || from > Math.max(lines.length, 1))
    return fail(`view_range starts at ${from}; ${shown} has ${lines.length} lines`);
  const last = to === -1 ? lines.length : Math.min(to, lines.length);
  if (last < from) return fail(`view_range [${from}, ${to}] is empty`);
  return { text: numbered(lines.slice(from - 1, last).join('\n'), from), isError: false, fields: base };
}

function create(args: FileEditorArgs, { target, shown, stat, base }: Target): ToolResult {
  if (args.file_text === undefined) return fail('create needs file_text');
  if (stat?.isDirectory()) return fail(`${shown} is a directory`);
  fs.mkdirSync(path.dirname(target), { recursive: true });
  fs.writeFileSync(target, args.file_text);
  return {
    text: `${stat ? 'Overwrote' : 'Created'} ${shown}`,
    isError: false,
    fields: { ...base, new_content: args.file_text },
  };
}

function replaceOnce(args: FileEditorArgs, { target, shown, stat, base }: Target): ToolResult {
  if (args.old_str === undefined || args.old_str === '') return fail('str_replace needs a non-empty old_str');
  if (!stat?.isFile()) return fail(`${shown} is not a file`);
  const before = fs.readFileSync(target, 'utf8');
  const count = before.split(args.old_str).length - 1;
  if (count === 0) return fail(`old_str does not occur in ${shown}; nothing changed`);
  if (count > 1)
    return fail(`old_str occurs ${count} times in ${shown}; make it unique (add surrounding lines); nothing changed`);
  const after = before.replace(args.old_str, () => args.new_str ?? '');
  fs.writeFileSync(target, after);
  return {
    text: `Edited ${shown}: replaced 1 occurrence`,
    isError: false,
    fields: { ...base, old_content: before, new_content: after },
  };
}

function insertAfterLine(args: FileEditorArgs, { target, shown, stat, base }: Target): ToolResult {
  if (args.new_str === undefined || args.insert_line === undefined) return fail('insert needs insert_line and new_str');
  if (!stat?.isFile()) return fail(`${shown} is not a file`);
  const before = fs.readFileSync(target, 'utf8');
  const lines = before.split('\n');
  if (args.insert_line > lines.length)
    return fail(`insert_line ${args.insert_line} is past the end of ${shown} (${lines.length} lines)`);
  lines.splice(args.insert_line, 0, ...args.new_str.split('\n'));
  const after = lines.join('\n');
  fs.writeFileSync(target, after);
  return {
    text: `Inserted ${args.new_str.split('\n').length} line(s) after line ${args.insert_line} of ${shown}`,
    isError: false,
    fields: { ...base, old_content: before, new_content: after },
  };
}
