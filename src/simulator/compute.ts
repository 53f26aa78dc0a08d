/** A plausible /metadata/instance/compute document for the simulated VM (api-version 2021-02-01 shape). */
export function defaultCompute(overrides: Readonly<Record<string, unknown>> = {}): Record<string, unknown> {
  const name = (overrides.name as string | undefined) ?? 'sim-vm-0';
  const subscriptionId = '00000000-0000-4000-8000-000000000001';
  const resourceGroupName = 'rg-sim';
  const base: Record<string, unknown> = {
    azEnvironment: 'AzurePublicCloud',
    location: 'westeurope',
    name,
    osProfile: { adminUsername: 'azureuser', computerName: name, disablePasswordAuthentication: 'true' },
    osType: 'Linux',
    platformFaultDomain: '0',
    platformUpdateDomain: '0',
    priority: 'Regular',
    resourceGroupName,
    resourceId: `/subscriptions/${subscriptionId}/resourceGroups/${resourceGroupName}/providers/Microsoft.Compute/virtualMachines/${name}`,
    subscriptionId,
    tags: '',
    vmId: '6d9d7a1e-0b9f-4e0c-9a59-5c3c0a3b1f01',
    vmScaleSetName: '',
    vmSize: 'Standard_D2s_v5',
    zone: '1',
  };
  return { ...base, ...overrides };
}
