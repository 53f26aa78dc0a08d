// Builds the Azure Workbook from queries/*.kql, so the dashboards run exactly the queries that
// are checked offline. Each query's `// @filters` line becomes the workbook's parameter filters.
//
//   node scripts/build-workbook.ts     # rewrites infra/bicep/workbook/scheduled-events.workbook.json
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = new URL('../', import.meta.url);
export const WORKBOOK_PATH = fileURLToPath(
  new URL('infra/bicep/workbook/scheduled-events.workbook.json', ROOT),
);
const RESOURCE_TYPE = 'microsoft.operationalinsights/workspaces';
const TABLE = 'VMScheduledEvents_CL';

/** What `// @filters` stands for in the workbook. */
export const WORKBOOK_FILTERS = [
  '| where TimeGenerated {TimeRange}',
  "| where '*' in ({Subscription}) or SubscriptionId in ({Subscription})",
  "| where '*' in ({ResourceGroup}) or ResourceGroup in ({ResourceGroup})",
  "| where '*' in ({EventType}) or EventType in ({EventType})",
].join('\n');

/** Sample values that stand for the parameters when the workbook's queries are analysed offline. */
export const SAMPLE_PARAMETER_VALUES: Readonly<Record<string, string>> = {
  '{TimeRange}': '> ago(7d)',
  '{Subscription}': "'00000000-0000-0000-0000-000000000000'",
  '{ResourceGroup}': "'rg-fleet'",
  '{EventType}': "'Reboot', 'Freeze'",
};

const TILES: readonly { file: string; title: string; visualization: string; size?: number }[] = [
  { file: 'upcoming-maintenance.kql', title: 'Upcoming maintenance', visualization: 'table' },
  { file: 'maintenance-over-time.kql', title: 'Maintenance over time', visualization: 'timechart' },
  {
    file: 'fleet-maintenance-audit.kql',
    title: 'Fleet maintenance audit (lifecycle per VM)',
    visualization: 'table',
  },
  {
    file: 'maintenance-by-placement.kql',
    title: 'Maintenance by zone, fault domain and scale set',
    visualization: 'table',
  },
  { file: 'affected-vs-notified.kql', title: 'VMs affected versus merely notified', visualization: 'table' },
  { file: 'cancelled-maintenance.kql', title: 'Cancelled maintenance', visualization: 'table' },
  { file: 'spot-evictions.kql', title: 'Spot evictions', visualization: 'table' },
];

function query(file: string): string {
  const text = readFileSync(fileURLToPath(new URL(`queries/${file}`, ROOT)), 'utf8');
  if (!text.includes('// @filters'))
    throw new Error(`queries/${file}: no "// @filters" line for the workbook parameters`);
  return text
    .split('\n')
    .filter((l) => !(l.startsWith('//') && !l.startsWith('// @filters')))
    .join('\n')
    .replace('// @filters', WORKBOOK_FILTERS)
    .trim();
}

function dropdown(name: string, label: string, column: string) {
  return {
    id: `sef-${name.toLowerCase()}`,
    version: 'KqlParameterItem/1.0',
    name,
    label,
    type: 2,
    // Required: with nothing selected the parameter would expand to an empty `in ()`.
    isRequired: true,
    multiSelect: true,
    quote: "'",
    delimiter: ',',
    query: `${TABLE}\n| where TimeGenerated {TimeRange}\n| distinct ${column}\n| order by ${column} asc`,
    typeSettings: { additionalResourceOptions: ['value::all'], selectAllValue: '*', showDefault: false },
    defaultValue: 'value::all',
    queryType: 0,
    resourceType: RESOURCE_TYPE,
  };
}

export function buildWorkbook(): unknown {
  return {
    version: 'Notebook/1.0',
    items: [
      {
        type: 1,
        name: 'title',
        content: {
          json: '## Azure Scheduled Events\nMaintenance of the fleet as forwarded by scheduled-events-forwarder. Records are de-duplicated by RecordId (delivery is at-least-once).',
        },
      },
      {
        type: 9,
        name: 'parameters',
        content: {
          version: 'KqlParameterItem/1.0',
          style: 'pills',
          queryType: 0,
          resourceType: RESOURCE_TYPE,
          parameters: [
            {
              id: 'sef-timerange',
              version: 'KqlParameterItem/1.0',
              name: 'TimeRange',
              label: 'Time range',
              type: 4,
              isRequired: true,
              value: { durationMs: 604_800_000 },
              typeSettings: {
                selectableValues: [86_400_000, 259_200_000, 604_800_000, 1_209_600_000, 2_592_000_000].map(
                  (durationMs) => ({
                    durationMs,
                  }),
                ),
              },
            },
            dropdown('Subscription', 'Subscription', 'SubscriptionId'),
            dropdown('ResourceGroup', 'Resource group', 'ResourceGroup'),
            dropdown('EventType', 'Event type', 'EventType'),
          ],
        },
      },
      ...TILES.map((t) => ({
        type: 3,
        name: t.file.replace(/\.kql$/, ''),
        content: {
          version: 'KqlItem/1.0',
          title: t.title,
          query: query(t.file),
          size: 0,
          queryType: 0,
          resourceType: RESOURCE_TYPE,
          visualization: t.visualization,
        },
      })),
    ],
    fallbackResourceIds: [],
  };
}

export function workbookJson(): string {
  return `${JSON.stringify(buildWorkbook(), null, 2)}\n`;
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  writeFileSync(WORKBOOK_PATH, workbookJson());
  console.log(`wrote ${WORKBOOK_PATH}`);
}
