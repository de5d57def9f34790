/**
 * The labelled demo's script: what the scripted LLM answers, step by step, so that a new user sees a
 * whole conversation (plan, look around, write a file, run it, fix it, finish) without an LLM key.
 */
import type { ScriptStep } from './scripted-llm';

export const DEMO_MODEL = 'scripted-demo (not a real model)';

export const DEMO_TASK =
  '[DEMO: this conversation is played by a scripted LLM, not a real model] ' +
  'Write greet.js that prints a greeting for the name given on its command line, and check that it works.';

const GREET_V1 = "const name = process.argv[2];\nconsole.log('Hello, ' + name);\n";

export const DEMO_SCRIPT: ScriptStep[] = [
  {
    content: 'I will plan the work first.',
    tool_calls: [
      {
        name: 'task_tracker',
        arguments: {
          command: 'plan',
          task_list: [
            { title: 'Look at the workspace', status: 'in_progress' },
            { title: 'Write greet.js', status: 'todo' },
            { title: 'Run it, with and without a name', status: 'todo' },
          ],
        },
      },
    ],
  },
  {
    content: 'Let me see what the workspace holds.',
    tool_calls: [{ name: 'terminal', arguments: { command: 'pwd && ls -la' } }],
  },
  {
    content: 'The workspace is empty; I will write the script.',
    tool_calls: [{ name: 'file_editor', arguments: { command: 'create', path: 'greet.js', file_text: GREET_V1 } }],
  },
  {
    content: 'Two checks in one step: with a name and without one.',
    tool_calls: [
      { name: 'terminal', arguments: { command: 'node greet.js Ada' } },
      { name: 'terminal', arguments: { command: 'node greet.js' } },
    ],
  },
  {
    tool_calls: [
      {
        name: 'think',
        arguments: { thought: 'Without a name it prints "Hello, undefined". A default name fixes that.' },
      },
    ],
  },
  {
    tool_calls: [
      {
        name: 'file_editor',
        arguments: {
          command: 'str_replace',
          path: 'greet.js',
          old_str: 'process.argv[2];',
          new_str: "process.argv[2] ?? 'world';",
        },
      },
    ],
  },
  { tool_calls: [{ name: 'terminal', arguments: { command: 'node greet.js && node greet.js Ada' } }] },
  {
    tool_calls: [
      {
        name: 'finish',
        arguments: { message: 'greet.js prints "Hello, <name>", and "Hello, world" when no name is given.' },
      },
    ],
  },
];
