/** The tools the agent offers, by name. */
import { fileEditorTool } from './file-editor';
import { finishTool } from './finish';
import { taskTrackerTool } from './task-tracker';
import { terminalTool } from './terminal';
import { thinkTool } from './think';
import type { AgentTool } from './tool';

export const AGENT_TOOLS: readonly AgentTool[] = [terminalTool, fileEditorTool, thinkTool, taskTrackerTool, finishTool];

export const toolByName = (name: string): AgentTool | undefined => AGENT_TOOLS.find((t) => t.name === name);
