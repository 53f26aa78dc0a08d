// The data collection rule the agent sends to through the Logs Ingestion API. Kind Direct gives
// it its own logs-ingestion endpoint; a data collection endpoint is only for private-link setups.

@description('Azure region of the rule (and of the optional endpoint): the region of the workspace, as the Logs Ingestion API requires.')
param location string

@description('Name of the data collection rule.')
param dataCollectionRuleName string

@description('Resource id of the destination workspace.')
param workspaceId string

@description('Name of the custom table the rule writes to.')
param tableName string

@description('Create a data collection endpoint for private link. It has public access disabled: add it to your Azure Monitor Private Link Scope, or the agents cannot reach it.')
param createDataCollectionEndpoint bool = false

@description('Name of the data collection endpoint, when created.')
param dataCollectionEndpointName string = '${dataCollectionRuleName}-dce'

@description('Tags for the rule and the endpoint.')
param tags object = {}

var recordSchema = loadJsonContent('../../../schema/scheduled-event-record.json')
var streamName = recordSchema.streamName
// Row-wise only, as ingestion-time transformations must be: drop anything that is not a record.
var transformKql = loadTextContent('../../../queries/dcr-transform.kql')

resource endpoint 'Microsoft.Insights/dataCollectionEndpoints@2023-03-11' = if (createDataCollectionEndpoint) {
  name: dataCollectionEndpointName
  location: location
  tags: tags
  properties: {
    networkAcls: {
      publicNetworkAccess: 'Disabled'
    }
  }
}

resource rule 'Microsoft.Insights/dataCollectionRules@2023-03-11' = {
  name: dataCollectionRuleName
  location: location
  tags: tags
  kind: 'Direct'
  properties: {
    dataCollectionEndpointId: createDataCollectionEndpoint ? endpoint.id : null
    streamDeclarations: {
      '${streamName}': {
        columns: [
          for column in recordSchema.columns: {
            name: column.name
            type: column.type
          }
        ]
      }
    }
    destinations: {
      logAnalytics: [
        {
          name: 'workspace'
          workspaceResourceId: workspaceId
        }
      ]
    }
    dataFlows: [
      {
        streams: [
          streamName
        ]
        destinations: [
          'workspace'
        ]
        transformKql: transformKql
        outputStream: 'Custom-${tableName}'
      }
    ]
  }
}

@description('Name of the rule.')
output dataCollectionRuleName string = rule.name

@description('Resource id of the rule (scope of the Monitoring Metrics Publisher role).')
output dataCollectionRuleId string = rule.id

@description('Immutable id of the rule, for the Logs Ingestion API.')
output immutableId string = rule.properties.immutableId

@description('Logs-ingestion endpoint: the private endpoint when one was created, else the rule\'s own.')
output logsIngestionEndpoint string = createDataCollectionEndpoint
  ? endpoint!.properties.logsIngestion.endpoint
  : rule.properties.endpoints.logsIngestion

@description('Stream name the agent sends.')
output streamName string = streamName
