/**
 * The shape every agent tool has: a name and description the LLM sees, a zod schema that is both the
 * validation of the LLM's arguments and the JSON schema sent as the tool's parameters, the kind of the
 * action it records, and what running it observes. One file per tool beside this one.
 */
import { z } from 'zod';

export interface ToolContext {
  /** The conversation's workspace (absolute); file paths are confined to it. */
  workspace: string;
  /** The command environment: the runtime's, minus its session key, plus the conversation's secrets. */
  env: NodeJS.ProcessEnv;
  maxOutputBytes: number;
  /** Aborted when the user interrupts the step. */
  signal: AbortSignal;
  /** Task-tracker state of the conversation (kept in its events). */
  tasks: TaskItem[];
}

export interface TaskItem {
  title: string;
  notes: string;
  status: 'todo' | 'in_progress' | 'done';
}

/** What a tool observed: `text` goes to the LLM; the observation is stored in the ObservationEvent. */
export interface ToolResult {
  text: string;
  isError: boolean;
  /** Fields of the observation besides kind, content and is_error. */
  fields?: Record<string, unknown>;
  /** Set by the finish tool: the run ends after this action. */
  finish?: boolean;
}

export interface AgentTool<S extends z.ZodObject = z.ZodObject> {
  name: string;
  description: string;
  params: S;
  /** The `kind` of the recorded action (SPEC 2.1 action kinds). */
  actionKind: string;
  /** The `kind` of the recorded observation. */
  observationKind: string;
  run(args: z.output<S>, ctx: ToolContext): Promise<ToolResult>;
}

export function defineTool<S extends z.ZodObject>(tool: AgentTool<S>): AgentTool {
  return tool as unknown as AgentTool;
}

/** The OpenAI function-tool definition of a tool: what the LLM is given. */
export function toolDefinition(tool: AgentTool): {
  type: 'function';
  function: { name: string; description: string; parameters: object };
} {
  const { $schema: _ignored, ...parameters } = z.toJSONSchema(tool.params, { io: 'input' }) as Record<string, unknown>;
  return { type: 'function', function: { name: tool.name, description: tool.description, parameters } };
}

/** FileEditorTool from file_editor: the kind of a tool as the OpenHands SDK names its classes. */
const toolKind = (name: string) => `${name.replace(/(^|_)([a-z])/g, (_m, _s, c: string) => c.toUpperCase())}Tool`;

/**
 * The published ToolDefinition of a tool (the OpenHands SDK's serialization, as SystemPromptEvent `tools`
 * holds it): its kind, its title, its description, and the kinds of its action and observation.
 */
export function publishedToolDefinition(tool: AgentTool): {
  kind: string;
  title: string;
  description: string;
  action_type: string;
  observation_type: string;
  annotations: null;
  meta: null;
} {
  return {
    kind: toolKind(tool.name),
    title: tool.name,
    description: tool.description,
    action_type: tool.actionKind,
    observation_type: tool.observationKind,
    annotations: null,
    meta: null,
  };
}
