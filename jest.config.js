/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  // test/docker needs a Docker engine (the global setup provides one); AGENT_CONTROL_DOCKER_TESTS=off leaves it out.
  // test/root needs root (uids, firewall rules): CI runs as root; elsewhere it is left out.
  testPathIgnorePatterns: [
    '/node_modules/',
    ...(process.env.AGENT_CONTROL_DOCKER_TESTS === 'off' ? ['<rootDir>/test/docker/'] : []),
    ...(process.getuid && process.getuid() !== 0 ? ['<rootDir>/test/root/'] : []),
  ],
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022' }, module: { type: 'commonjs' } }],
    // The OpenAPI validator ships ESM only; compile it to CommonJS for jest.
    '^.+/@seriousme/.+\\.js$': ['@swc/jest', { jsc: { target: 'es2022' }, module: { type: 'commonjs' } }],
  },
  transformIgnorePatterns: ['/node_modules/(?!@seriousme/)'],
  globalSetup: '<rootDir>/test/setup/global-setup.ts',
  globalTeardown: '<rootDir>/test/setup/global-teardown.ts',
  // Integration tests share two real servers; two workers fit this 2-core machine.
  maxWorkers: 2,
  testTimeout: 60_000,
  slowTestThreshold: 20,
};
