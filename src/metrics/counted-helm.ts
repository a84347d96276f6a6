/** Helm with each operation counted in eva_helm_operations_total, whichever way helm runs. */
import type { Helm, HistoryEntry, OperationOptions, ReleaseInfo, UpgradeInstallOptions } from '../adapters/helm.ts';
import type { OperatorMetrics } from './metrics.ts';

export function countedHelm(helm: Helm, metrics: Pick<OperatorMetrics, 'countHelmOperation'>): Helm {
  const counted = async <T>(operation: string, run: () => Promise<T>): Promise<T> => {
    try {
      const result = await run();
      metrics.countHelmOperation(operation, 'ok');
      return result;
    } catch (err) {
      metrics.countHelmOperation(operation, 'error');
      throw err;
    }
  };
  return {
    upgradeInstall: (options: UpgradeInstallOptions): Promise<void> => counted('upgrade', () => helm.upgradeInstall(options)),
    uninstall: (release: string, namespace: string, options?: OperationOptions): Promise<void> => counted('uninstall', () => helm.uninstall(release, namespace, options)),
    history: (release: string, namespace: string): Promise<HistoryEntry[]> => counted('history', () => helm.history(release, namespace)),
    status: (release: string, namespace: string): Promise<ReleaseInfo | undefined> => counted('status', () => helm.status(release, namespace)),
    close: (): Promise<void> => helm.close(),
  };
}
