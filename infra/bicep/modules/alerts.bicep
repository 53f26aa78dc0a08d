// Log alerts on the forwarded records: impactful maintenance scheduled, and Spot evictions.
// The queries live in queries/ and are checked offline; dimensions must be columns they output.

@description('Azure region of the alert rules.')
param location string

@description('Resource id of the workspace the alerts query.')
param workspaceId string

@description('Prefix of the alert rule names.')
param namePrefix string = 'scheduled-events'

@description('Action group to notify (resource id). Empty: alerts fire without notifications.')
param actionGroupId string = ''

// The queries pick records first ingested in the last 5 minutes (the frequency), so a record the
// agent delivers late, after a sink outage, still alerts. The query range must cover that delay:
// two days, the longest a log alert allows.
var evaluationFrequency = 'PT5M'
var windowSize = 'PT1H'
var queryTimeRange = 'P2D'

@description('Tags for the rules.')
param tags object = {}

var actionGroups = empty(actionGroupId) ? [] : [actionGroupId]

resource impactfulMaintenance 'Microsoft.Insights/scheduledQueryRules@2023-12-01' = {
  name: '${namePrefix}-impactful-maintenance'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'Impactful maintenance scheduled (Reboot, Redeploy, Terminate, Preempt)'
    description: 'A VM was named in a Scheduled Event that reboots, moves, deletes or evicts it.'
    severity: 2
    enabled: true
    scopes: [
      workspaceId
    ]
    evaluationFrequency: evaluationFrequency
    windowSize: windowSize
    overrideQueryTimeRange: queryTimeRange
    // The table may be brand new in the same deployment; its first records decide, not validation.
    skipQueryValidation: true
    criteria: {
      allOf: [
        {
          query: loadTextContent('../../../queries/alert-impactful-maintenance.kql')
          timeAggregation: 'Count'
          dimensions: [
            {
              name: 'VmName'
              operator: 'Include'
              values: [
                '*'
              ]
            }
            {
              name: 'ResourceId'
              operator: 'Include'
              values: [
                '*'
              ]
            }
            {
              name: 'EventType'
              operator: 'Include'
              values: [
                '*'
              ]
            }
          ]
          operator: 'GreaterThan'
          threshold: 0
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: false
    actions: {
      actionGroups: actionGroups
    }
  }
}

resource spotEviction 'Microsoft.Insights/scheduledQueryRules@2023-12-01' = {
  name: '${namePrefix}-spot-eviction'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'Spot VM eviction'
    description: 'A Spot VM received a Preempt event: it is being deleted, with as little as 30 seconds notice.'
    severity: 3
    enabled: true
    scopes: [
      workspaceId
    ]
    evaluationFrequency: evaluationFrequency
    windowSize: windowSize
    overrideQueryTimeRange: queryTimeRange
    // The table may be brand new in the same deployment; its first records decide, not validation.
    skipQueryValidation: true
    criteria: {
      allOf: [
        {
          query: loadTextContent('../../../queries/alert-spot-eviction.kql')
          timeAggregation: 'Count'
          dimensions: [
            {
              name: 'VmName'
              operator: 'Include'
              values: [
                '*'
              ]
            }
            {
              name: 'VmScaleSetName'
              operator: 'Include'
              values: [
                '*'
              ]
            }
          ]
          operator: 'GreaterThan'
          threshold: 0
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: false
    actions: {
      actionGroups: actionGroups
    }
  }
}

@description('Resource ids of the alert rules.')
output alertRuleIds array = [
  impactfulMaintenance.id
  spotEviction.id
]
