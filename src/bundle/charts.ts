/**
 * The module charts bundled under <chartBasePath>/modules/<module>, read and fingerprinted once when
 * the operator starts: a drift check compares release labels with these fingerprints and reads no file.
 * The charts ship in the operator's image; when a chart's files change under a running operator
 * anyway (a mounted folder, the confinement tests), a file watch marks that chart and its next use
 * fingerprints it again, so its releases are upgraded as after an operator upgrade.
 */
import { createHash } from 'node:crypto';
import { type FSWatcher, readdirSync, readFileSync, statSync, watch } from 'node:fs';
import { join, sep } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { isModuleName, MODULES, type ModuleName } from '../api/modules.ts';
import { Reason } from '../api/reasons.ts';
import { DependencyError } from '../errors.ts';

export interface BundledChart {
  /** The chart folder helm installs from. */
  readonly path: string;
  /** Chart version plus a digest of every file (see chartFingerprint). */
  readonly fingerprint: string;
}

export const chartPath = (chartBasePath: string, module: ModuleName): string => join(chartBasePath, 'modules', module);

/**
 * Chart version plus a digest of every file in the chart folder: an operator upgrade that ships a
 * changed chart under the same version still upgrades its releases.
 */
export function chartFingerprint(dir: string): string {
  let version: unknown;
  try {
    version = (parseYaml(readFileSync(join(dir, 'Chart.yaml'), 'utf8')) as { version?: unknown } | null)?.version;
  } catch (err) {
    throw new DependencyError(Reason.ChartMissing, `cannot read the module chart at ${dir}: ${(err as Error).message}`, { cause: err });
  }
  const files = (readdirSync(dir, { recursive: true }) as string[]).filter((f) => statSync(join(dir, f)).isFile()).sort();
  const digest = createHash('sha256');
  for (const file of files) digest.update(file).update('\0').update(readFileSync(join(dir, file))).update('\0');
  return `${String(version)}+${digest.digest('hex').slice(0, 16)}`;
}

function bundledChart(chartBasePath: string, module: ModuleName): BundledChart | Error {
  const path = chartPath(chartBasePath, module);
  try {
    return { path, fingerprint: chartFingerprint(path) };
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  }
}

export class ChartCatalog {
  private readonly chartBasePath: string;
  /** Per module its chart, or why it cannot be used (reported by the tenants that need it, as before). */
  private readonly charts: Map<ModuleName, BundledChart | Error>;
  /** Modules whose chart files changed since they were fingerprinted. */
  private readonly changed = new Set<ModuleName>();
  private watcher: FSWatcher | undefined;
  /** The watch could not start or broke: every use fingerprints again, as before the catalogue. */
  private blind = false;

  private constructor(chartBasePath: string, charts: Map<ModuleName, BundledChart | Error>) {
    this.chartBasePath = chartBasePath;
    this.charts = charts;
  }

  /** Reads every module's chart once; a missing or unreadable one fails only the tenants whose tier has it. */
  static load(chartBasePath: string): ChartCatalog {
    return new ChartCatalog(chartBasePath, new Map(MODULES.map((module) => [module, bundledChart(chartBasePath, module)])));
  }

  /**
   * Watches the charts folder from now on (the watch does not keep the process alive). A change in a
   * module's folder marks that module; one elsewhere (the shared library chart) marks them all.
   */
  watch(): this {
    if (this.watcher !== undefined) return this;
    const modules = join(this.chartBasePath, 'modules');
    try {
      // A recursive watch reports a missing folder late, as an 'error' event: asked first.
      if (!statSync(modules).isDirectory()) throw new Error(`${modules} is not a folder`);
      this.watcher = watch(modules, { recursive: true, persistent: false }, (_event, file) => {
        this.markChanged(file);
      });
      // An unhandled 'error' would end the process; a broken watch only costs reads.
      this.watcher.on('error', () => {
        this.close();
        this.blind = true;
      });
    } catch {
      // No modules folder (every chart is ChartMissing) or no watch to be had.
      this.blind = true;
    }
    return this;
  }

  close(): void {
    this.watcher?.close();
    this.watcher = undefined;
  }

  private markChanged(file: string | null): void {
    const top = file?.split(sep)[0] ?? '';
    for (const module of isModuleName(top) ? [top] : MODULES) this.changed.add(module);
  }

  chart(module: ModuleName): BundledChart {
    // Unmarked before reading: a change while it reads marks it again for the next use.
    if (this.changed.delete(module) || this.blind) this.charts.set(module, bundledChart(this.chartBasePath, module));
    const chart = this.charts.get(module);
    if (chart === undefined) throw new DependencyError(Reason.ChartMissing, `no chart is bundled for module ${module}`);
    if (chart instanceof Error) throw chart;
    return chart;
  }
}
