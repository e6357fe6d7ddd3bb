/**
 * The import graph of src/, read with the TypeScript parser (so imports
 * inside comments and JSDoc examples do not count). Used by
 * architecture.test.ts to check the rules of docs/architecture.md.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, posix, relative } from 'node:path';
import ts from 'typescript';

export interface Import {
  /** As written: './x.js', 'node:fs', 'undici'. */
  specifier: string;
  /** For a relative import: the target, as a path under src/ ('policy/gate.ts'). */
  target?: string;
  /** `import type` / `export type`, or every named binding marked `type`: gone at run time. */
  typeOnly: boolean;
  /** `import('…')`: loaded on first use, not when the importing module loads. */
  dynamic: boolean;
}

/** Every .ts file under `srcDir`, as paths relative to it with '/' separators. */
export function sourceFiles(srcDir: string): string[] {
  return readdirSync(srcDir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile() && d.name.endsWith('.ts'))
    .map((d) => relative(srcDir, join(d.parentPath, d.name)).split('\\').join('/'))
    .sort();
}

function namedAllType(bindings: ts.NamedImportBindings | ts.NamedExportBindings | undefined) {
  return (
    bindings !== undefined &&
    (ts.isNamedImports(bindings) || ts.isNamedExports(bindings)) &&
    bindings.elements.length > 0 &&
    bindings.elements.every((e) => e.isTypeOnly)
  );
}

/** The imports of one file (`file` relative to `srcDir`). */
export function importsOf(srcDir: string, file: string): Import[] {
  const text = readFileSync(join(srcDir, file), 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false);
  const found: Import[] = [];
  const add = (specifier: string, typeOnly: boolean, dynamic: boolean) => {
    const entry: Import = { specifier, typeOnly, dynamic };
    if (specifier.startsWith('.')) {
      entry.target = posix
        .normalize(posix.join(posix.dirname(file), specifier))
        .replace(/\.js$/, '.ts');
    }
    found.push(entry);
  };
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause;
      const typeOnly =
        clause !== undefined &&
        (clause.isTypeOnly || (clause.name === undefined && namedAllType(clause.namedBindings)));
      add(node.moduleSpecifier.text, typeOnly, false);
    } else if (
      ts.isExportDeclaration(node) &&
      node.moduleSpecifier !== undefined &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      add(node.moduleSpecifier.text, node.isTypeOnly || namedAllType(node.exportClause), false);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] !== undefined &&
      ts.isStringLiteralLike(node.arguments[0])
    ) {
      add(node.arguments[0].text, false, true);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      const literal = node.argument.literal;
      if (ts.isStringLiteral(literal)) add(literal.text, true, false);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/**
 * Files reachable from `start` through relative imports, `start` included:
 * all kinds, or with `loaded` only those that load when `start` loads
 * (static, not type-only).
 */
export function closure(graph: Map<string, Import[]>, start: string, loaded = false): Set<string> {
  const seen = new Set<string>();
  const stack = [start];
  while (stack.length > 0) {
    const file = stack.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const i of graph.get(file) ?? []) {
      if (i.target !== undefined && !(loaded && (i.typeOnly || i.dynamic))) stack.push(i.target);
    }
  }
  return seen;
}

/**
 * Groups of files that import each other, each sorted: Tarjan's strongly
 * connected components of size > 1. Type-only imports count (a cycle of types
 * still ties two modules' designs together); `import()` does not.
 */
export function cycles(graph: Map<string, Import[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  const strong = (v: string) => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const i of graph.get(v) ?? []) {
      const w = i.target;
      if (w === undefined || i.dynamic || !graph.has(w)) continue;
      if (!index.has(w)) {
        strong(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        group.push(w);
      } while (w !== v);
      if (group.length > 1) groups.push(group.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) strong(v);
  return groups;
}
