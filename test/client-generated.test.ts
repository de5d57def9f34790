/**
 * The committed client types are the ones the service's own OpenAPI document gives today (npm run build
 * regenerates them), and the streamed-start reader takes every shape the service writes.
 */
import { jsonArrayElements, JsonArrayStreamError } from '../src/client';
import { distPath, runNode } from './helpers/run';

async function* chunks(...parts: string[]) {
  for (const p of parts) yield new TextEncoder().encode(p);
}
const collect = async (it: AsyncIterable<unknown>) => {
  const out: unknown[] = [];
  for await (const x of it) out.push(x);
  return out;
};

describe('generated client', () => {
  it('src/client/generated/openapi.ts matches the served document (run npm run build when it does not)', async () => {
    // The built generator (openapi-typescript is ESM-only inside, which jest does not load).
    const check = await runNode(distPath('scripts', 'generate-client.js'), ['--check'], {});
    expect(check.stderr).toBe('');
    expect(check.code).toBe(0);
  }, 60_000);

  it('reads a JSON array split anywhere, with keep-alives, strings holding brackets and commas', async () => {
    const a = { id: 'x', status: 'WORKING', detail: 'a "],[" b \\ ,' };
    const b = { id: 'x', status: 'READY', nested: [1, [2, { c: '}' }]] };
    const text = `[\n${JSON.stringify(a)}\n \n,${JSON.stringify(b)}\n]\n`;
    expect(await collect(jsonArrayElements(chunks(...text.split(''))))).toEqual([a, b]);
    expect(await collect(jsonArrayElements(chunks('[', ' \n', ']')))).toEqual([]);
  });

  it('refuses a truncated stream, text that is not an array, and an element over the bound', async () => {
    await expect(collect(jsonArrayElements(chunks('[{"a":1},')))).rejects.toThrow(JsonArrayStreamError);
    await expect(collect(jsonArrayElements(chunks('{"a":1}')))).rejects.toThrow(JsonArrayStreamError);
    await expect(
      collect(jsonArrayElements(chunks(`[${JSON.stringify({ s: 'x'.repeat(200) })}]`), 100)),
    ).rejects.toThrow(/exceeds 100/);
  });
});
