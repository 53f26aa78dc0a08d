// The custom table. Column types are the DCR stream types of the schema file; a table spells
// datetime as dateTime.

@description('Name of the existing workspace in this resource group.')
param workspaceName string

@description('Name of the custom table (ends in _CL).')
param tableName string

@description('Columns from schema/scheduled-event-record.json: name, type (DCR spelling), description.')
param columns array

@description('Retention of the table, in days (-1: the workspace default).')
param retentionInDays int = -1

resource workspace 'Microsoft.OperationalInsights/workspaces@2023-09-01' existing = {
  name: workspaceName
}

resource table 'Microsoft.OperationalInsights/workspaces/tables@2022-10-01' = {
  parent: workspace
  name: tableName
  properties: {
    plan: 'Analytics'
    retentionInDays: retentionInDays
    schema: {
      name: tableName
      description: 'Azure Scheduled Events change records forwarded by scheduled-events-forwarder.'
      columns: [
        for column in columns: {
          name: column.name
          type: column.type == 'datetime' ? 'dateTime' : column.type
          description: column.description
        }
      ]
    }
  }
}

@description('Name of the table.')
output tableName string = table.name
