/** The service's schemas under the names the client and its callers use (generated from its OpenAPI document). */
import type { components } from './generated/openapi';

export type Schemas = components['schemas'];
export type StartTask = Schemas['AppConversationStartTask'];
export type StartRequest = Schemas['AppConversationStartRequest'];
export type Event = Schemas['Event'];
