// The Kusto language service (the one Azure Data Explorer and Log Analytics editors use), loaded
// for offline semantic checks of every KQL query the project ships. The two bridge files must be
// loaded in this order: the first defines the globals `Bridge` and `System`, the second `Kusto`.
import '@kusto/language-service-next/bridge.min.js';
import '@kusto/language-service-next/Kusto.Language.Bridge.min.js';
import type { ColumnDefinition } from '../../src/transform/record-schema.ts';

// biome-free zone: the bridge has no module types, only globals.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const K = (globalThis as any).Kusto.Language;

export interface KqlDiagnostic {
  readonly code: string;
  readonly severity: string;
  readonly message: string;
  readonly line: number;
  readonly column: number;
  readonly snippet: string;
}

export interface KqlAnalysis {
  readonly errors: readonly KqlDiagnostic[];
  /** Output columns of a tabular query, in order; null for a non-tabular result. */
  readonly columns: readonly { name: string; type: string }[] | null;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function toArray(list: any): any[] {
  const out = [];
  for (let i = 0; i < (list?.Count ?? 0); i++) out.push(list.getItem(i));
  return out;
}

/** Kusto scalar type of a DCR/table column type. */
export function kustoType(type: string): string {
  const map: Record<string, string> = { boolean: 'bool', dateTime: 'datetime' };
  return map[type] ?? type;
}

export function tableSchema(columns: readonly Pick<ColumnDefinition, 'name' | 'type'>[]): string {
  return `(${columns.map((c) => `${c.name}:${kustoType(c.type)}`).join(', ')})`;
}

/** A database holding the given tables: name -> column list. */
export function globalsWith(
  tables: Record<string, readonly Pick<ColumnDefinition, 'name' | 'type'>[]>,
): unknown {
  const symbols = Object.entries(tables).map(([name, cols]) =>
    K.Symbols.TableSymbol.From(tableSchema(cols)).WithName(name),
  );
  const db = new K.Symbols.DatabaseSymbol.ctor('workspace', symbols);
  return K.GlobalState.Default.WithDatabase(db);
}

export function analyse(query: string, globals: unknown): KqlAnalysis {
  const code = K.KustoCode.ParseAndAnalyze(query, globals);
  const errors = toArray(code.GetDiagnostics())
    .filter((d) => d.Severity === 'Error')
    .map((d) => {
      const line = { v: 0 };
      const col = { v: 0 };
      code.TryGetLineAndOffset(d.Start, line, col);
      return {
        code: d.Code as string,
        severity: d.Severity as string,
        message: d.Message as string,
        line: line.v,
        column: col.v,
        snippet: query.substr(d.Start, d.Length),
      };
    });
  const rt = code.ResultType;
  const columns =
    rt instanceof K.Symbols.TableSymbol
      ? toArray(rt.Columns).map((c) => ({ name: c.Name as string, type: c.Type.Name as string }))
      : null;
  return { errors, columns };
}

/** Tabular operators a KQL query pipes into, in order (`| where` -> 'where'). */
export function pipeOperators(query: string): string[] {
  const withoutComments = query.replace(/\/\/.*$/gm, '').replace(/'[^']*'|"[^"]*"/g, "''");
  return [...withoutComments.matchAll(/\|\s*([a-z][a-z-]*)/g)].map((m) => m[1]!);
}
