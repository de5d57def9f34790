/**
 * What the provider suites (test/sandbox-providers*.test.ts) pass to a provider's start(): a session key,
 * and a control plane address where nothing listens (the runtimes there never call it).
 */
export const KEY = 'acp_session_key_for_provider_tests';
export const CONTROL_PLANE = 'http://127.0.0.1:9';
