/** Who this VM is, from /metadata/instance/compute. Field names are the record's columns. */
export interface VmIdentity {
  readonly VmId: string;
  readonly VmName: string;
  readonly ComputerName: string;
  readonly ResourceId: string;
  readonly SubscriptionId: string;
  readonly ResourceGroup: string;
  readonly Location: string;
  readonly Zone: string;
  readonly VmScaleSetName: string;
  readonly VmSize: string;
  readonly OsType: string;
  readonly Priority: string;
  readonly PlatformFaultDomain: string;
  readonly PlatformUpdateDomain: string;
}

export const UNKNOWN_VM_IDENTITY: VmIdentity = Object.freeze({
  VmId: '',
  VmName: '',
  ComputerName: '',
  ResourceId: '',
  SubscriptionId: '',
  ResourceGroup: '',
  Location: '',
  Zone: '',
  VmScaleSetName: '',
  VmSize: '',
  OsType: '',
  Priority: '',
  PlatformFaultDomain: '',
  PlatformUpdateDomain: '',
});

function str(v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return '';
}

/** Tolerant: any missing or odd-typed value becomes "" rather than failing the whole identity. */
export function identityFromCompute(compute: unknown): VmIdentity {
  const c = (compute && typeof compute === 'object' ? compute : {}) as Record<string, unknown>;
  const os = (c.osProfile && typeof c.osProfile === 'object' ? c.osProfile : {}) as Record<string, unknown>;
  return Object.freeze({
    VmId: str(c.vmId),
    VmName: str(c.name),
    ComputerName: str(os.computerName),
    ResourceId: str(c.resourceId),
    SubscriptionId: str(c.subscriptionId),
    ResourceGroup: str(c.resourceGroupName),
    Location: str(c.location),
    Zone: str(c.zone),
    VmScaleSetName: str(c.vmScaleSetName),
    VmSize: str(c.vmSize),
    OsType: str(c.osType),
    Priority: str(c.priority),
    PlatformFaultDomain: str(c.platformFaultDomain),
    PlatformUpdateDomain: str(c.platformUpdateDomain),
  });
}

/** A compute document only counts as an identity when it names the VM. */
export function isKnownIdentity(id: VmIdentity): boolean {
  return id.VmId !== '' || id.VmName !== '';
}

export function sameIdentity(a: VmIdentity, b: VmIdentity): boolean {
  return (Object.keys(a) as (keyof VmIdentity)[]).every((k) => a[k] === b[k]);
}

/** Reads back an identity cached by the agent itself; anything odd becomes "". */
export function identityFromCached(cached: unknown): VmIdentity {
  const c = (cached && typeof cached === 'object' ? cached : {}) as Record<string, unknown>;
  const out = Object.fromEntries(Object.keys(UNKNOWN_VM_IDENTITY).map((k) => [k, str(c[k])]));
  return Object.freeze(out as unknown as VmIdentity);
}
