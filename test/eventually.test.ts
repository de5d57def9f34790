/** The tests' `eventually`: retries until the check passes, and fails with the last try's error. */
import { eventually } from './helpers/eventually';

describe('eventually', () => {
  it('retries a failing assertion until it passes, and answers its value', async () => {
    let tries = 0;
    const value = await eventually(
      () => {
        tries++;
        expect(tries).toBeGreaterThanOrEqual(3);
        return tries;
      },
      { timeoutMs: 1000, intervalMs: 1 },
    );
    expect(value).toBe(3);
  });

  it('retries a predicate while it answers false; other answers (undefined from an assertion) pass', async () => {
    let n = 0;
    await expect(eventually(() => ++n === 2, { timeoutMs: 1000, intervalMs: 1 })).resolves.toBe(true);
    await expect(eventually(() => undefined, { timeoutMs: 0 })).resolves.toBeUndefined();
  });

  it('fails with the last error once the time runs out, after at least one try', async () => {
    let tries = 0;
    const started = Date.now();
    const failure = await eventually(
      () => {
        tries++;
        throw new Error(`try ${tries}`);
      },
      { timeoutMs: 100, intervalMs: 10 },
    ).catch((e: Error) => e);
    expect(tries).toBeGreaterThan(1);
    expect(failure).toEqual(new Error(`try ${tries}`));
    expect(Date.now() - started).toBeGreaterThanOrEqual(100);
    await expect(eventually(() => false, { what: 'the flag', timeoutMs: 0 })).rejects.toThrow(
      'the flag: not within 0 ms',
    );
  });
});
