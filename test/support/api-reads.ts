/** What a step's Kubernetes deps are in a test that runs it alone: the clients, reading straight from the API (as provisioning does). */
import type { Kube } from '../../src/adapters/kube.ts';
import { apiReads, type KubeReads } from '../../src/adapters/tenant-objects.ts';

export const apiKube = (kube: Kube): { kube: Kube; reads: KubeReads } => ({ kube, reads: apiReads(kube) });
