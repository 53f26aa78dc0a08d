import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { type BicepFile, bicepGet, isExpr, parseBicep } from './bicep.ts';

export const BICEP_DIR = resolve('infra/bicep');
export const QUERIES_DIR = resolve('queries');

export function bicepPaths(dir = BICEP_DIR): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? bicepPaths(join(dir, e.name)) : e.name.endsWith('.bicep') ? [join(dir, e.name)] : [],
  );
}

export function parseAllBicep(): BicepFile[] {
  return bicepPaths().map((p) => parseBicep(p));
}

/** Parses the real files, with one file's text replaced: for the deliberately broken inputs. */
export function parseAllBicepWith(fileSuffix: string, edit: (text: string) => string): BicepFile[] {
  return bicepPaths().map((p) => {
    if (!p.endsWith(fileSuffix)) return parseBicep(p);
    const before = readFileSync(p, 'utf8');
    const after = edit(before);
    if (after === before) throw new Error(`the edit of ${fileSuffix} changed nothing`);
    return parseBicep(p, after);
  });
}

export function queryFiles(): { name: string; text: string }[] {
  return readdirSync(QUERIES_DIR)
    .filter((f) => f.endsWith('.kql'))
    .sort()
    .map((name) => ({ name, text: readFileSync(join(QUERIES_DIR, name), 'utf8') }));
}

export interface AlertRule {
  readonly symbol: string;
  readonly queryPath: string;
  readonly query: string;
  readonly dimensions: readonly string[];
}

/** The log alert rules of a parsed file, with the text of the query each one loads. */
export function alertRules(file: BicepFile): AlertRule[] {
  return file.resources
    .filter((r) => r.type === 'Microsoft.Insights/scheduledQueryRules')
    .flatMap((r) => {
      const allOf = bicepGet(r.body, 'properties.criteria.allOf');
      return (Array.isArray(allOf) ? allOf : []).map((criterion) => {
        const q = bicepGet(criterion, 'query');
        const m = isExpr(q) ? /^loadTextContent\('([^']+)'\)$/.exec(q.expr) : null;
        if (!m) throw new Error(`${r.symbol}: the alert query must be loadTextContent('<file in queries/>')`);
        const queryPath = resolve(dirname(file.path), m[1]!);
        const dims = bicepGet(criterion, 'dimensions');
        return {
          symbol: r.symbol,
          queryPath,
          query: readFileSync(queryPath, 'utf8'),
          dimensions: (Array.isArray(dims) ? dims : []).map((d) => String(bicepGet(d, 'name'))),
        };
      });
    });
}
