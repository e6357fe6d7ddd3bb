/**
 * `staunch/request-init` as a user's project sees it: TypeScript compiles a
 * small file that passes `staunch: { … }` and `idempotencyKey` through ky and
 * ofetch. With the augmentation it has no error; without it (the same file,
 * minus the import) ky's and ofetch's option types refuse both fields, which
 * is what the augmentation is for.
 */
import { join, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, test } from 'vitest';

const root = resolve(import.meta.dirname, '../..');
/** Virtual files, placed in test/fetch/ so that `ky` and `ofetch` resolve from node_modules. */
const dir = join(root, 'test/fetch');

const USAGE = `
import ky from 'ky';
import { ofetch } from 'ofetch';

export const viaKy = ky.post('http://127.0.0.1/orders', {
  json: { amount: 1 },
  retry: 0,
  staunch: { retry: { attempts: 5 }, timeout: { total: 10_000 } },
  idempotencyKey: 'order-42',
});
export const viaOfetch = ofetch('http://127.0.0.1/orders', {
  method: 'POST',
  body: { amount: 1 },
  retry: 2,
  staunch: { retry: false },
  idempotencyKey: 'order-42',
});
// The fields are typed, not any: a misspelt option is still an error.
// @ts-expect-error retyr is not a staunch option
export const misspelt = ky('http://127.0.0.1/', { staunch: { retyr: 2 } });
`;

/** The diagnostics of compiling `source` as one file of a strict NodeNext project. */
function diagnostics(source: string): string[] {
  const file = join(dir, '__request-init-usage__.ts');
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    lib: ['lib.es2023.d.ts'],
    types: ['node'],
    strict: true,
    exactOptionalPropertyTypes: true,
    skipLibCheck: true,
    noEmit: true,
  };
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.fileExists = (name) => name === file || fileExists.call(host, name);
  host.readFile = (name) => (name === file ? source : readFile.call(host, name));
  host.getSourceFile = (name, version, ...rest) =>
    name === file
      ? ts.createSourceFile(name, source, version)
      : getSourceFile.call(host, name, version, ...rest);
  const program = ts.createProgram([file], options, host);
  return ts
    .getPreEmitDiagnostics(program)
    .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
}

describe('staunch/request-init', () => {
  test('with it, ky and ofetch accept staunch: { … } and idempotencyKey', () => {
    const errors = diagnostics(`import type {} from '../../src/request-init.js';\n${USAGE}`);
    expect(errors).toEqual([]);
  }, 60_000);

  test('without it, the same file does not compile: the fields are unknown to both', () => {
    const errors = diagnostics(USAGE).join('\n');
    expect(errors).toMatch(/'staunch' does not exist in type 'Options'/);
    expect(errors).toMatch(/'staunch' does not exist in type 'FetchOptions/);
  }, 60_000);
});
