/** The package's client entry: the typed client, its errors and the generated types. */
export {
  AgentControlClient,
  unwrap,
  type ClientOptions,
  type Event,
  type Schemas,
  type StartRequest,
  type StartTask,
  type TailOptions,
} from './client';
export { ApiError, ProtocolError, UnreachableError } from './errors';
export { jsonArrayElements, JsonArrayStreamError } from './json-array-stream';
export type { components, paths, operations } from './generated/openapi';
