/** Names and labels every per-tenant object shares, derived from the capsule code. */
import { GROUP } from '../api/constants.ts';

export const LABELS = {
  capsuleCode: `${GROUP}/capsule-code`,
  tier: `${GROUP}/tier`,
  wave: `${GROUP}/wave`,
  tenantUid: `${GROUP}/tenant-uid`,
  managedBy: 'app.kubernetes.io/managed-by',
} as const;

export const MANAGED_BY = 'eva-operator';

export const tenantNamespace = (code: string): string => `eva-tenant-${code.toLowerCase()}`;
export const eventsStream = (code: string): string => `eva-${code}-events`;
export const commandsStream = (code: string): string => `eva-${code}-commands`;
