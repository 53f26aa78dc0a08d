// The fleet's user-assigned managed identity: every VM of the fleet gets it, the agent uses it.

@description('Azure region.')
param location string

@description('Name of the identity.')
param identityName string

@description('Tags for the identity.')
param tags object = {}

resource identity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: identityName
  location: location
  tags: tags
}

@description('Resource id of the identity (assign it to the VMs or scale sets).')
output identityId string = identity.id

@description('Client id: the agent\'s managedIdentityClientId.')
output clientId string = identity.properties.clientId

@description('Principal id: the one the roles are assigned to.')
output principalId string = identity.properties.principalId
