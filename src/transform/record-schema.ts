import schema from '../../schema/scheduled-event-record.json' with { type: 'json' };

export type ColumnType = 'string' | 'datetime' | 'int' | 'long' | 'real' | 'boolean' | 'dynamic';

export interface ColumnDefinition {
  readonly name: string;
  readonly type: ColumnType;
  readonly description: string;
}

export interface RecordSchema {
  readonly tableName: string;
  readonly streamName: string;
  readonly columns: readonly ColumnDefinition[];
}

/** The one column list; Bicep loads the same file with loadJsonContent. */
export const RECORD_SCHEMA: RecordSchema = schema as RecordSchema;
