/** The workflow bundle's entry point: every workflow type the worker runs. */
export { diagnosticsWorkflow } from './diagnostics-workflow';
export { sandboxWorkflow } from './sandbox-workflow';
export { startTaskWorkflow } from './start-task-workflow';
export { conversationCallbacksWorkflow } from './callbacks-workflow';
