// Log Analytics workspace (new, or an existing one by resource id) and the custom table whose
// columns come from schema/scheduled-event-record.json, the agent's record contract.

@description('Azure region for a new workspace.')
param location string

@description('Name of the workspace to create. Ignored when existingWorkspaceId is set.')
param workspaceName string

@description('Resource id of an existing workspace to use instead of creating one. Empty: create one.')
param existingWorkspaceId string = ''

@description('Retention of the new workspace, in days.')
@minValue(30)
@maxValue(730)
param workspaceRetentionInDays int = 90

@description('Retention of the custom table, in days: 4 to 730, or -1 for the workspace default.')
@minValue(-1)
@maxValue(730)
param tableRetentionInDays int = -1

@description('Tags for the new workspace.')
param tags object = {}

var recordSchema = loadJsonContent('../../../schema/scheduled-event-record.json')
var createWorkspace = empty(existingWorkspaceId)

resource newWorkspace 'Microsoft.OperationalInsights/workspaces@2023-09-01' = if (createWorkspace) {
  name: workspaceName
  location: location
  tags: tags
  properties: {
    sku: {
      name: 'PerGB2018'
    }
    retentionInDays: workspaceRetentionInDays
  }
}

resource existingWorkspace 'Microsoft.OperationalInsights/workspaces@2023-09-01' existing = if (!createWorkspace) {
  name: last(split(existingWorkspaceId, '/'))
  scope: resourceGroup(split(existingWorkspaceId, '/')[2], split(existingWorkspaceId, '/')[4])
}

var workspaceId = createWorkspace ? newWorkspace.id : existingWorkspaceId

// An existing workspace may live in another resource group: the table is deployed where the
// workspace is. Scope and name come from parameters, known when the deployment starts.
module table 'log-analytics-table.bicep' = {
  name: 'scheduled-events-table'
  // One resourceGroup() call with conditional arguments: a conditional between two scopes is
  // rejected by the compiler (BCP420), and ARM evaluates only the branch its if() takes.
  scope: resourceGroup(
    createWorkspace ? subscription().subscriptionId : split(existingWorkspaceId, '/')[2],
    createWorkspace ? resourceGroup().name : split(existingWorkspaceId, '/')[4]
  )
  dependsOn: [
    newWorkspace
  ]
  params: {
    workspaceName: createWorkspace ? workspaceName : last(split(existingWorkspaceId, '/'))
    tableName: recordSchema.tableName
    columns: recordSchema.columns
    retentionInDays: tableRetentionInDays
  }
}

@description('Resource id of the workspace.')
output workspaceId string = workspaceId

@description('Name of the custom table.')
output tableName string = table.outputs.tableName

@description('Region of the workspace: a data collection rule must be in the same region.')
output workspaceLocation string = createWorkspace ? newWorkspace!.location : existingWorkspace!.location
