/** Builds the OpenAPI 3.1 document from the routes' zod schemas: nothing in it is written by hand. */
import { OpenApiGeneratorV31, type OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { SECURITY_SCHEMES } from '../web/security';

export const API_VERSION = '0.0.1';

export function buildOpenApiDocument(registry: OpenAPIRegistry, serverUrl: string) {
  for (const [name, scheme] of Object.entries(SECURITY_SCHEMES)) {
    registry.registerComponent('securitySchemes', name, { ...scheme });
  }
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Agent Conversation Control Service',
      version: API_VERSION,
      description:
        'Control plane for AI software-agent conversations: starts, sandboxes, the event log and organizations. ' +
        'Every /api route needs the X-Access-Token header (APIKeyHeader) unless it says otherwise. ' +
        'Invalid path, query or body parameters answer 422 with an HTTPValidationError body.',
    },
    servers: [{ url: serverUrl }],
  });
}
