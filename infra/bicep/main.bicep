// The receiving side of scheduled-events-forwarder: Log Analytics table + DCR (Logs Ingestion),
// Event Hubs, the fleet identity with least-privilege roles, the workbook and the alert rules.
//
//   az deployment group create -g <rg> -f infra/bicep/main.bicep -p namePrefix=<prefix>

targetScope = 'resourceGroup'

@description('Azure region for every resource.')
param location string = resourceGroup().location

@description('Short prefix for resource names: 3-11 lowercase letters and digits, starting with a letter (Event Hubs namespace names must).')
@minLength(3)
@maxLength(11)
param namePrefix string

@description('Resource id of an existing Log Analytics workspace. Empty: create one.')
param existingWorkspaceId string = ''

@description('Retention of the custom table, in days: 4 to 730, or -1 for the workspace default.')
@minValue(-1)
@maxValue(730)
param tableRetentionInDays int = -1

@description('Create a data collection endpoint for private-link setups (else the DCR\'s own endpoint is used).')
param createDataCollectionEndpoint bool = false

@description('Event Hubs namespace tier.')
@allowed([
  'Standard'
  'Premium'
])
param eventHubsSkuName string = 'Standard'

@description('Partitions of the event hub.')
@minValue(1)
@maxValue(32)
param eventHubPartitionCount int = 4

@description('Retention of the event hub, in days.')
@minValue(1)
@maxValue(7)
param eventHubRetentionInDays int = 7

@description('Consumer group for downstream readers.')
param consumerGroupName string = 'downstream'

@description('Create a user-assigned managed identity for the fleet.')
param createFleetIdentity bool = true

@description('Further principal ids (e.g. system-assigned identities of VMs) that get the same two roles.')
param additionalPrincipalIds array = []

@description('Action group for the alerts (resource id). Empty: alerts without notifications.')
param actionGroupId string = ''

@description('Tags for every resource.')
param tags object = {}

var suffix = uniqueString(resourceGroup().id, namePrefix)

module logAnalytics 'modules/log-analytics.bicep' = {
  name: 'scheduled-events-log-analytics'
  params: {
    location: location
    workspaceName: '${namePrefix}-log-${suffix}'
    existingWorkspaceId: existingWorkspaceId
    tableRetentionInDays: tableRetentionInDays
    tags: tags
  }
}

module dataCollection 'modules/data-collection.bicep' = {
  name: 'scheduled-events-data-collection'
  params: {
    location: logAnalytics.outputs.workspaceLocation
    dataCollectionRuleName: '${namePrefix}-dcr-scheduled-events'
    workspaceId: logAnalytics.outputs.workspaceId
    tableName: logAnalytics.outputs.tableName
    createDataCollectionEndpoint: createDataCollectionEndpoint
    tags: tags
  }
}

module eventHubs 'modules/event-hubs.bicep' = {
  name: 'scheduled-events-event-hubs'
  params: {
    location: location
    namespaceName: '${namePrefix}-ehns-${suffix}'
    skuName: eventHubsSkuName
    partitionCount: eventHubPartitionCount
    messageRetentionInDays: eventHubRetentionInDays
    consumerGroupName: consumerGroupName
    tags: tags
  }
}

module fleetIdentity 'modules/identity.bicep' = if (createFleetIdentity) {
  name: 'scheduled-events-identity'
  params: {
    location: location
    identityName: '${namePrefix}-id-scheduled-events'
    tags: tags
  }
}

module roles 'modules/role-assignments.bicep' = {
  name: 'scheduled-events-roles'
  params: {
    // union() also drops duplicates: two assignments with the same guid() name would fail the deployment.
    principalIds: union(createFleetIdentity ? [fleetIdentity!.outputs.principalId] : [], additionalPrincipalIds)
    eventHubsNamespaceName: eventHubs.outputs.namespaceName
    eventHubName: eventHubs.outputs.eventHubName
    dataCollectionRuleName: dataCollection.outputs.dataCollectionRuleName
  }
}

module workbook 'modules/workbook.bicep' = {
  name: 'scheduled-events-workbook'
  params: {
    location: location
    workspaceId: logAnalytics.outputs.workspaceId
    tags: tags
  }
}

module alerts 'modules/alerts.bicep' = {
  name: 'scheduled-events-alerts'
  dependsOn: [
    dataCollection
  ]
  params: {
    location: location
    workspaceId: logAnalytics.outputs.workspaceId
    namePrefix: '${namePrefix}-scheduled-events'
    actionGroupId: actionGroupId
    tags: tags
  }
}

var identityClientId = createFleetIdentity ? fleetIdentity!.outputs.clientId : ''
// Without a fleet identity the agent uses the VM's system-assigned one: no client id then.
var identitySetting = createFleetIdentity ? { managedIdentityClientId: identityClientId } : {}

@description('Resource id of the workspace.')
output workspaceId string = logAnalytics.outputs.workspaceId

@description('Event Hubs namespace host name.')
output eventHubsNamespace string = eventHubs.outputs.fullyQualifiedNamespace

@description('Event hub name.')
output eventHubName string = eventHubs.outputs.eventHubName

@description('Consumer group for downstream readers.')
output consumerGroupName string = eventHubs.outputs.consumerGroupName

@description('Logs Ingestion endpoint.')
output logsIngestionEndpoint string = dataCollection.outputs.logsIngestionEndpoint

@description('Immutable id of the data collection rule.')
output dataCollectionRuleImmutableId string = dataCollection.outputs.immutableId

@description('Stream name of the data collection rule.')
output streamName string = dataCollection.outputs.streamName

@description('Resource id of the fleet identity (assign it to the VMs or scale sets); empty when not created.')
output fleetIdentityId string = createFleetIdentity ? fleetIdentity!.outputs.identityId : ''

@description('Client id of the fleet identity, for the agent.')
output fleetIdentityClientId string = identityClientId

@description('A ready agent configuration: az deployment group show -g <rg> -n <deployment> --query properties.outputs.agentConfig.value > agent.json')
output agentConfig object = {
  stateDir: '/var/lib/scheduled-events-forwarder'
  sinks: [
    union(
      {
        type: 'eventhubs'
        fullyQualifiedNamespace: eventHubs.outputs.fullyQualifiedNamespace
        eventHubName: eventHubs.outputs.eventHubName
      },
      identitySetting
    )
    union(
      {
        type: 'loganalytics'
        endpoint: dataCollection.outputs.logsIngestionEndpoint
        ruleId: dataCollection.outputs.immutableId
        streamName: dataCollection.outputs.streamName
      },
      identitySetting
    )
  ]
}
