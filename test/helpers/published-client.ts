/**
 * A client generated from the published OpenHands Cloud API 0.0.1 document (test/fixtures/published,
 * types by openapi-typescript, calls by openapi-fetch): what a developer who integrates against the
 * reference service would use. Tests call our routes with it to show they take its bodies and that its
 * answers decode as the published schemas say.
 */
import createClient from 'openapi-fetch';
import type { paths } from '../fixtures/published/openhands-cloud';

export type PublishedPaths = paths;

export function publishedClient(baseUrl: string, apiKey: string) {
  return createClient<paths>({ baseUrl, headers: { 'X-Access-Token': apiKey } });
}
