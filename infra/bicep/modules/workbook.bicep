// The Azure Workbook: queries/*.kql as tiles (built by scripts/build-workbook.ts).

@description('Azure region.')
param location string

@description('Resource id of the workspace the workbook reads.')
param workspaceId string

@description('Display name of the workbook.')
param displayName string = 'Azure Scheduled Events'

@description('Tags for the workbook.')
param tags object = {}

resource workbook 'Microsoft.Insights/workbooks@2023-06-01' = {
  name: guid(resourceGroup().id, workspaceId, 'scheduled-events-workbook')
  location: location
  tags: tags
  kind: 'shared'
  properties: {
    displayName: displayName
    category: 'workbook'
    sourceId: workspaceId
    // The workspace becomes the tiles' fallback resource, so the workbook works opened on its own.
    serializedData: string(union(json(loadTextContent('../workbook/scheduled-events.workbook.json')), {
      fallbackResourceIds: [
        workspaceId
      ]
    }))
  }
}

@description('Resource id of the workbook.')
output workbookId string = workbook.id
