/** The workflow bundle's entry point: every workflow type the worker runs. */
import type { WORKFLOW_TYPES, WorkflowSignatures } from '../src/temporal/shared';
import { conversationCallbacksWorkflow } from './callbacks-workflow';
import { diagnosticsWorkflow } from './diagnostics-workflow';
import { sandboxWorkflow } from './sandbox-workflow';
import { startAdmissionWorkflow } from './start-admission-workflow';
import { startTaskWorkflow } from './start-task-workflow';

export {
  diagnosticsWorkflow,
  sandboxWorkflow,
  startTaskWorkflow,
  conversationCallbacksWorkflow,
  startAdmissionWorkflow,
};

/** Callers start workflows by the contract's names and signatures: a type check that they are these functions'. */
type Registered = { [K in keyof WorkflowSignatures as (typeof WORKFLOW_TYPES)[K]]: WorkflowSignatures[K] };
const _registered: Registered = {
  diagnosticsWorkflow,
  sandboxWorkflow,
  startTaskWorkflow,
  conversationCallbacksWorkflow,
  startAdmissionWorkflow,
};
