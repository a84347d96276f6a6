import type { Tier } from './constants.ts';

/** The module charts bundled with the operator (charts/modules/<name>). */
export const MODULES = [
  'eva-forge',
  'eva-gateway',
  'eva-shell',
  'eva-whisper',
  'orbit-crm',
  'orbit-itsm',
] as const;
export type ModuleName = (typeof MODULES)[number];

const STARTER_MODULES: readonly ModuleName[] = ['orbit-crm', 'orbit-itsm'];
const CUSTOMER_MODULES: readonly ModuleName[] = [...STARTER_MODULES, 'eva-gateway', 'eva-shell'];

export const MODULES_BY_TIER: Readonly<Record<Tier, readonly ModuleName[]>> = {
  Starter: STARTER_MODULES,
  Customer: CUSTOMER_MODULES,
  Enterprise: MODULES,
  Platform: MODULES,
};

export function isModuleName(name: string): name is ModuleName {
  return (MODULES as readonly string[]).includes(name);
}
