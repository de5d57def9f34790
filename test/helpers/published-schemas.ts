/**
 * The published OpenHands Cloud document (test/fixtures/published) as the tests check answers against
 * it: read fresh, SPEC.md's git provider names put in where a suite needs them, and a validator of its
 * component schemas.
 */
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import fs from 'node:fs';
import path from 'node:path';
import { GIT_PROVIDERS } from '../../src/schemas/app-conversations';

/** The document as published, a copy of its own per call (a suite may change it). */
export const publishedDocument = (): any =>
  JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'fixtures', 'published', 'openhands-cloud.json'), 'utf8'));

/** `doc` with SPEC.md's names (GIT_PROVIDERS) in ProviderType's enum, where the published one has the reference service's hosts. */
export function withSpecProviderNames(doc: any): any {
  doc.components.schemas.ProviderType.enum = [...GIT_PROVIDERS];
  return doc;
}

/** A validator of `doc`'s component schemas: the errors of a value against the one named, none when it conforms. */
export function componentValidator(doc: any): (name: string, value: unknown) => string[] {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema({ $id: 'published', components: doc.components });
  return (name, value) => {
    const validate = ajv.getSchema(`published#/components/schemas/${name}`)!;
    return validate(value) ? [] : validate.errors!.map((e) => `${e.instancePath} ${e.message}`);
  };
}
