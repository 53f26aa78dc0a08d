// Offline checks of the Bicep: a syntax parse with tree-sitter-bicep, and static assertions over
// the parse tree. Nothing here compiles Bicep (the Bicep CLI cannot be fetched on this machine),
// so property names and types of Azure resources are not validated; README says how to.
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import Parser from 'tree-sitter';
import Bicep from 'tree-sitter-bicep';

const parser = new Parser();
parser.setLanguage(Bicep as Parser.Language);

type Node = Parser.SyntaxNode;

/** A Bicep value as far as it is a literal; anything computed stays an expression text. */
export type BicepValue =
  | string
  | number
  | boolean
  | null
  | BicepValue[]
  | { readonly [key: string]: BicepValue }
  | { readonly expr: string; readonly node: string };

export interface BicepResource {
  readonly file: string;
  readonly symbol: string;
  readonly type: string;
  readonly apiVersion: string | null;
  readonly existing: boolean;
  readonly line: number;
  readonly body: { readonly [key: string]: BicepValue };
}

export interface BicepModule {
  readonly file: string;
  readonly symbol: string;
  readonly source: string;
  readonly line: number;
  readonly body: { readonly [key: string]: BicepValue };
}

export interface BicepFile {
  readonly path: string;
  readonly text: string;
  readonly syntaxErrors: readonly string[];
  readonly resources: readonly BicepResource[];
  readonly modules: readonly BicepModule[];
  readonly variables: Readonly<Record<string, BicepValue>>;
  /** Every call of loadJsonContent / loadTextContent, resolved to an absolute path. */
  readonly loads: readonly { fn: string; path: string }[];
}

function stringValue(n: Node): string | null {
  if (n.type !== 'string' || n.namedChildren.some((c) => c.type === 'interpolation')) return null;
  return n.namedChildren
    .filter((c) => c.type === 'string_content' || c.type === 'escape_sequence')
    .map((c) => c.text)
    .join('');
}

export function isExpr(v: BicepValue | undefined): v is { expr: string; node: string } {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && 'expr' in v && 'node' in v;
}

function toValue(n: Node): BicepValue {
  switch (n.type) {
    case 'object': {
      const out: Record<string, BicepValue> = {};
      for (const prop of n.namedChildren.filter((c) => c.type === 'object_property')) {
        const [key, value] = prop.namedChildren;
        if (!key || !value) continue;
        out[stringValue(key) ?? key.text] = toValue(value);
      }
      return out;
    }
    case 'array':
      return n.namedChildren.map(toValue);
    case 'boolean':
      return n.text === 'true';
    case 'number':
      return Number(n.text);
    case 'null':
      return null;
    case 'string': {
      const s = stringValue(n);
      return s ?? { expr: n.text, node: n.type };
    }
    case 'for_statement': {
      const body = n.childForFieldName('body');
      return { expr: n.text, node: body ? `for:${body.type}` : 'for' };
    }
    default:
      return { expr: n.text, node: n.type };
  }
}

function bodyOf(decl: Node): Node | null {
  for (const c of decl.namedChildren) {
    if (c.type === 'object') return c;
    if (c.type === 'for_statement') return c.childForFieldName('body');
    if (c.type === 'if_statement') return c.namedChildren.find((x) => x.type === 'object') ?? null;
  }
  return null;
}

function syntaxErrors(root: Node): string[] {
  const out: string[] = [];
  const visit = (n: Node) => {
    if (n.type === 'ERROR' || n.isMissing) {
      out.push(
        `${n.startPosition.row + 1}:${n.startPosition.column + 1} ${n.isMissing ? `missing ${n.type}` : `unexpected ${JSON.stringify(n.text.slice(0, 40))}`}`,
      );
    }
    if (n.hasError || n.isMissing) for (const c of n.children) visit(c);
  };
  visit(root);
  return out;
}

export function parseBicep(path: string, text = readFileSync(path, 'utf8')): BicepFile {
  const root = parser.parse(text).rootNode;
  const resources: BicepResource[] = root.descendantsOfType('resource_declaration').map((decl) => {
    const [id, typeNode] = decl.namedChildren;
    const full = (typeNode && stringValue(typeNode)) ?? '';
    const [type, apiVersion] = full.split('@');
    const body = bodyOf(decl);
    return {
      file: path,
      symbol: id?.text ?? '',
      type: type ?? '',
      apiVersion: apiVersion ?? null,
      existing: decl.children.some((c) => c.type === 'existing'),
      line: decl.startPosition.row + 1,
      body: body ? (toValue(body) as Record<string, BicepValue>) : {},
    };
  });
  const modules: BicepModule[] = root.descendantsOfType('module_declaration').map((decl) => {
    const [id, source] = decl.namedChildren;
    const body = bodyOf(decl);
    return {
      file: path,
      symbol: id?.text ?? '',
      source: (source && stringValue(source)) ?? '',
      line: decl.startPosition.row + 1,
      body: body ? (toValue(body) as Record<string, BicepValue>) : {},
    };
  });
  const variables: Record<string, BicepValue> = {};
  for (const v of root.descendantsOfType('variable_declaration')) {
    const named = v.namedChildren;
    const id = named[0];
    const value = named.at(-1);
    if (id && value) variables[id.text] = toValue(value);
  }
  const loads = root
    .descendantsOfType('call_expression')
    .map((c) => ({
      fn: c.childForFieldName('function')?.text ?? '',
      arg: c.childForFieldName('arguments')?.namedChildren[0],
    }))
    .filter((c) => c.fn === 'loadJsonContent' || c.fn === 'loadTextContent')
    .map((c) => ({ fn: c.fn, path: resolve(dirname(path), (c.arg && stringValue(c.arg)) ?? '') }));
  return { path, text, syntaxErrors: syntaxErrors(root), resources, modules, variables, loads };
}

/** The string a value stands for, following one level of `var` reference. */
function resolved(
  v: BicepValue | undefined,
  vars: Readonly<Record<string, BicepValue>>,
): BicepValue | undefined {
  if (isExpr(v) && v.node === 'identifier' && v.expr in vars) return vars[v.expr];
  return v;
}

export const EVENT_HUBS_DATA_SENDER = '2b629674-e913-4c01-ae53-ef4638d8f975';
export const MONITORING_METRICS_PUBLISHER = '3913510d-42f4-4e42-8a64-420c390055eb';

/** Each role the fleet gets, and the one resource type it may be scoped to. */
export const EXPECTED_ROLES: Readonly<Record<string, string>> = {
  [EVENT_HUBS_DATA_SENDER]: 'Microsoft.EventHub/namespaces/eventhubs',
  [MONITORING_METRICS_PUBLISHER]: 'Microsoft.Insights/dataCollectionRules',
};

function get(obj: BicepValue | undefined, path: string): BicepValue | undefined {
  let cur: BicepValue | undefined = obj;
  for (const key of path.split('.')) {
    if (cur === null || typeof cur !== 'object' || Array.isArray(cur) || isExpr(cur)) return undefined;
    cur = (cur as Record<string, BicepValue>)[key];
  }
  return cur;
}

export { get as bicepGet };

/** Every static rule the infrastructure must keep; an empty list means all hold. */
export function checkInfrastructure(files: readonly BicepFile[]): string[] {
  const problems: string[] = [];
  const at = (r: BicepResource) => `${r.file.split('infra/bicep/')[1] ?? r.file}:${r.line} ${r.symbol}`;
  for (const f of files) for (const e of f.syntaxErrors) problems.push(`${f.path}: syntax: ${e}`);
  const all = files.flatMap((f) => f.resources);

  for (const r of all) {
    if (!r.apiVersion || !/^\d{4}-\d{2}-\d{2}(-preview)?$/.test(r.apiVersion)) {
      problems.push(`${at(r)}: api-version not pinned (${r.type}@${r.apiVersion ?? ''})`);
    }
  }

  const namespaces = all.filter((r) => r.type === 'Microsoft.EventHub/namespaces' && !r.existing);
  if (namespaces.length === 0) problems.push('no Event Hubs namespace is declared');
  for (const ns of namespaces) {
    if (get(ns.body, 'properties.disableLocalAuth') !== true) {
      problems.push(`${at(ns)}: properties.disableLocalAuth must be true (Entra ID only, no SAS keys)`);
    }
    if (get(ns.body, 'properties.minimumTlsVersion') !== '1.2') {
      problems.push(`${at(ns)}: properties.minimumTlsVersion must be '1.2'`);
    }
  }

  const assignments = all.filter((r) => r.type === 'Microsoft.Authorization/roleAssignments');
  if (assignments.length !== Object.keys(EXPECTED_ROLES).length) {
    problems.push(
      `expected exactly ${Object.keys(EXPECTED_ROLES).length} role assignments, found ${assignments.length}`,
    );
  }
  const granted = new Set<string>();
  for (const ra of assignments) {
    const file = files.find((f) => f.path === ra.file)!;
    const roleExpr = get(ra.body, 'properties.roleDefinitionId');
    const roleIds = isExpr(roleExpr)
      ? [...roleExpr.expr.matchAll(/[A-Za-z_][A-Za-z0-9_]*|'[0-9a-f-]{36}'/g)].map((m) => {
          const token = m[0];
          const v = resolved({ expr: token, node: 'identifier' }, file.variables);
          return typeof v === 'string' ? v : token.replace(/'/g, '');
        })
      : [];
    const roleId = roleIds.find((id) =>
      /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id),
    );
    if (!roleId || !(roleId in EXPECTED_ROLES)) {
      problems.push(
        `${at(ra)}: role ${roleId ?? '(not a literal GUID)'} is not one of the two the agent needs`,
      );
      continue;
    }
    granted.add(roleId);
    const scope = get(ra.body, 'scope');
    const scopeSymbol = isExpr(scope) && scope.node === 'identifier' ? scope.expr : null;
    const scopeResource = file.resources.find((r) => r.symbol === scopeSymbol);
    if (!scopeResource || scopeResource.type !== EXPECTED_ROLES[roleId]) {
      problems.push(
        `${at(ra)}: role ${roleId} must be scoped to a ${EXPECTED_ROLES[roleId]}, not ${scopeResource?.type ?? String(scopeSymbol)}`,
      );
    }
    if (get(ra.body, 'properties.principalType') !== 'ServicePrincipal') {
      problems.push(`${at(ra)}: principalType must be 'ServicePrincipal'`);
    }
    const name = get(ra.body, 'name');
    if (!isExpr(name) || !/^guid\(/.test(name.expr))
      problems.push(`${at(ra)}: name must be a deterministic guid(...)`);
  }
  for (const role of Object.keys(EXPECTED_ROLES)) {
    if (!granted.has(role)) problems.push(`role ${role} (${EXPECTED_ROLES[role]}) is not assigned`);
  }

  // A scope must reduce to one kind at compile time: `c ? resourceGroup() : resourceGroup(x, y)` is
  // BCP420 (and older compilers deployed it into the wrong resource group).
  for (const m of [...files.flatMap((f) => f.modules), ...all]) {
    const scope = get((m as { body: BicepValue }).body, 'scope');
    if (
      isExpr(scope) &&
      scope.node === 'ternary_expression' &&
      (scope.expr.match(/resourceGroup\(/g) ?? []).length >= 2
    ) {
      problems.push(
        `${m.file}:${m.line} ${m.symbol}: scope is a conditional between two scopes (BCP420); use one resourceGroup() with conditional arguments`,
      );
    }
  }

  // The Logs Ingestion API needs the rule in the workspace's region.
  const dcrModule = files.flatMap((f) => f.modules).find((m) => m.source === 'modules/data-collection.bicep');
  const dcrLocation = get(dcrModule?.body, 'params.location');
  if (!dcrModule || !isExpr(dcrLocation) || !/\.outputs\.workspaceLocation$/.test(dcrLocation.expr)) {
    problems.push(
      `the data collection rule must be deployed in the workspace's region (params.location: <log analytics module>.outputs.workspaceLocation)`,
    );
  }

  problems.push(...checkDataCollection(files));
  return problems;
}

/** Stream, output stream, destinations and the schema file line up in the DCR and the table. */
function checkDataCollection(files: readonly BicepFile[]): string[] {
  const problems: string[] = [];
  const schemaPath = resolve('schema/scheduled-event-record.json');
  const rules = files.flatMap((f) =>
    f.resources.filter((r) => r.type === 'Microsoft.Insights/dataCollectionRules' && !r.existing),
  );
  if (rules.length !== 1) return [`expected one data collection rule, found ${rules.length}`];
  const rule = rules[0]!;
  const file = files.find((f) => f.path === rule.file)!;
  if (get(rule.body, 'kind') !== 'Direct')
    problems.push(`data collection rule must be kind 'Direct' (its own logs-ingestion endpoint)`);
  if (!file.loads.some((l) => l.fn === 'loadJsonContent' && l.path === schemaPath)) {
    problems.push(
      `${rule.file}: the stream must come from schema/scheduled-event-record.json (loadJsonContent)`,
    );
  }
  const declarations = get(rule.body, 'properties.streamDeclarations');
  const declaredStreams =
    declarations && typeof declarations === 'object' && !Array.isArray(declarations)
      ? Object.keys(declarations)
      : [];
  const flows = get(rule.body, 'properties.dataFlows');
  const destinations = get(rule.body, 'properties.destinations.logAnalytics');
  const destinationNames = Array.isArray(destinations) ? destinations.map((d) => get(d, 'name')) : [];
  if (!Array.isArray(flows) || flows.length === 0)
    return [...problems, 'the data collection rule has no dataFlows'];
  for (const flow of flows) {
    const streams = get(flow, 'streams');
    for (const s of Array.isArray(streams) ? streams : []) {
      const name = isExpr(s) ? `'\${${s.expr}}'` : `'${String(s)}'`;
      if (!declaredStreams.includes(name) && !declaredStreams.includes(String(s))) {
        problems.push(
          `dataFlows stream ${String(isExpr(s) ? s.expr : s)} is not declared in streamDeclarations`,
        );
      }
    }
    const dests = get(flow, 'destinations');
    for (const d of Array.isArray(dests) ? dests : []) {
      if (!destinationNames.includes(d))
        problems.push(`dataFlows destination ${JSON.stringify(d)} is not a declared destination`);
    }
    const out = get(flow, 'outputStream');
    if (!isExpr(out) || !/^'Custom-\$\{tableName\}'$/.test(out.expr)) {
      problems.push(
        `dataFlows outputStream must be 'Custom-\${tableName}' (the custom table), got ${isExpr(out) ? out.expr : JSON.stringify(out)}`,
      );
    }
    const transform = get(flow, 'transformKql');
    if (!isExpr(transform))
      problems.push('dataFlows transformKql must come from queries/ (checked with the other KQL)');
  }
  const columns =
    get(declarations, `'\${streamName}'.columns`) ??
    (declaredStreams[0] ? get(declarations, `${declaredStreams[0]}.columns`) : undefined);
  if (!isExpr(columns) || !/for column in recordSchema\.columns/.test(columns.expr)) {
    problems.push('streamDeclarations columns must be generated from recordSchema.columns');
  }

  const tables = files.flatMap((f) =>
    f.resources.filter((r) => r.type === 'Microsoft.OperationalInsights/workspaces/tables'),
  );
  if (tables.length !== 1) problems.push(`expected one custom table, found ${tables.length}`);
  for (const t of tables) {
    const cols = get(t.body, 'properties.schema.columns');
    if (!isExpr(cols) || !cols.expr.includes("column.type == 'datetime' ? 'dateTime' : column.type")) {
      problems.push(`${t.file}: table columns must map the schema's DCR types (datetime -> dateTime)`);
    }
  }
  const tableModuleCaller = files.find((f) => /module table 'log-analytics-table\.bicep'/.test(f.text));
  if (
    !tableModuleCaller?.loads.some((l) => l.path === schemaPath) ||
    !/columns: recordSchema\.columns/.test(tableModuleCaller.text)
  ) {
    problems.push(
      'the table columns must be passed recordSchema.columns from schema/scheduled-event-record.json',
    );
  }
  return problems;
}
