/** The tools the agent offers, by name. */
import { fileEditorTool } from './file-editor';
import { finishTool } from './finish';
import { taskTrackerTool } from './task-tracker';
import { terminalTool } from './terminal';
import { thinkTool } from './think';
import { publishedToolDefinition, toolDefinition, type AgentTool } from './tool';

export const AGENT_TOOLS: readonly AgentTool[] = [terminalTool, fileEditorTool, thinkTool, taskTrackerTool, finishTool];

export const toolByName = (name: string): AgentTool | undefined => AGENT_TOOLS.find((t) => t.name === name);

/** Their definitions as the LLM gets them (built once: turning a schema into JSON Schema is not free). */
export const AGENT_TOOL_DEFINITIONS = AGENT_TOOLS.map(toolDefinition);

/** Their published ToolDefinitions, as SystemPromptEvent `tools` holds them. */
export const PUBLISHED_TOOL_DEFINITIONS = AGENT_TOOLS.map(publishedToolDefinition);
