// Event Hubs namespace, hub and consumer group. Entra ID only (local SAS auth disabled), TLS 1.2.

@description('Azure region.')
param location string

@description('Name of the namespace (globally unique).')
param namespaceName string

@description('Namespace tier.')
@allowed([
  'Standard'
  'Premium'
])
param skuName string = 'Standard'

@description('Throughput units (Standard) or processing units (Premium).')
@minValue(1)
param skuCapacity int = 1

@description('Name of the event hub the agents send to.')
param eventHubName string = 'scheduled-events'

@description('Partitions of the event hub.')
@minValue(1)
@maxValue(32)
param partitionCount int = 4

@description('Retention of the event hub, in days.')
@minValue(1)
@maxValue(7)
param messageRetentionInDays int = 7

@description('Consumer group for downstream readers.')
param consumerGroupName string = 'downstream'

@description('Tags for the namespace.')
param tags object = {}

resource namespace 'Microsoft.EventHub/namespaces@2024-01-01' = {
  name: namespaceName
  location: location
  tags: tags
  sku: {
    name: skuName
    tier: skuName
    capacity: skuCapacity
  }
  properties: {
    disableLocalAuth: true
    minimumTlsVersion: '1.2'
  }
}

resource hub 'Microsoft.EventHub/namespaces/eventhubs@2024-01-01' = {
  parent: namespace
  name: eventHubName
  properties: {
    partitionCount: partitionCount
    messageRetentionInDays: messageRetentionInDays
  }
}

resource consumerGroup 'Microsoft.EventHub/namespaces/eventhubs/consumergroups@2024-01-01' = {
  parent: hub
  name: consumerGroupName
}

@description('Name of the namespace.')
output namespaceName string = namespace.name

@description('Fully qualified namespace host name, for the agent (from the service, so sovereign clouds work).')
output fullyQualifiedNamespace string = replace(replace(namespace.properties.serviceBusEndpoint, 'https://', ''), ':443/', '')

@description('Name of the event hub.')
output eventHubName string = hub.name

@description('Resource id of the event hub (scope of the Data Sender role).')
output eventHubId string = hub.id

@description('Name of the consumer group.')
output consumerGroupName string = consumerGroup.name
