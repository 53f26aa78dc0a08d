// Least privilege, exactly two roles per principal: send to this one hub, publish to this one rule.

@description('Principal ids (managed identities) that run the agent.')
param principalIds array

@description('Name of the Event Hubs namespace.')
param eventHubsNamespaceName string

@description('Name of the event hub.')
param eventHubName string

@description('Name of the data collection rule.')
param dataCollectionRuleName string

// Azure Event Hubs Data Sender
var eventHubsDataSenderRoleId = '2b629674-e913-4c01-ae53-ef4638d8f975'
// Monitoring Metrics Publisher (the role the Logs Ingestion API requires on the rule)
var monitoringMetricsPublisherRoleId = '3913510d-42f4-4e42-8a64-420c390055eb'

resource namespace 'Microsoft.EventHub/namespaces@2024-01-01' existing = {
  name: eventHubsNamespaceName
}

resource hub 'Microsoft.EventHub/namespaces/eventhubs@2024-01-01' existing = {
  parent: namespace
  name: eventHubName
}

resource rule 'Microsoft.Insights/dataCollectionRules@2023-03-11' existing = {
  name: dataCollectionRuleName
}

resource sendToHub 'Microsoft.Authorization/roleAssignments@2022-04-01' = [
  for principalId in principalIds: {
    name: guid(hub.id, principalId, eventHubsDataSenderRoleId)
    scope: hub
    properties: {
      roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', eventHubsDataSenderRoleId)
      principalId: principalId
      principalType: 'ServicePrincipal'
    }
  }
]

resource publishToRule 'Microsoft.Authorization/roleAssignments@2022-04-01' = [
  for principalId in principalIds: {
    name: guid(rule.id, principalId, monitoringMetricsPublisherRoleId)
    scope: rule
    properties: {
      roleDefinitionId: subscriptionResourceId(
        'Microsoft.Authorization/roleDefinitions',
        monitoringMetricsPublisherRoleId
      )
      principalId: principalId
      principalType: 'ServicePrincipal'
    }
  }
]
