/** The package's client entry: the typed client, its errors and the generated types. */
export { AgentControlClient, type ClientOptions } from './client';
export type { TailOptions } from './event-tail';
export type { Event, Schemas, StartRequest, StartTask } from './schema-types';
export { unwrap } from './unwrap';
export { ApiError, ProtocolError, UnreachableError } from './errors';
export { jsonArrayElements, JsonArrayStreamError } from './json-array-stream';
export type { components, paths, operations } from './generated/openapi';
