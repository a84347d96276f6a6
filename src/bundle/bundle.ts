/**
 * What the operator ships besides its code, loaded once at start and handed to the steps: the image
 * catalogue (images.txt), the module charts with their fingerprints, and the seed data. Steps get these
 * catalogues, never base paths, so no step reads a bundle file during ensure or a drift check (a
 * chart whose files changed is fingerprinted again once, see charts.ts).
 */
import { ChartCatalog } from './charts.ts';
import { ImageCatalog } from './images.ts';
import { SeedCatalog } from './seeds.ts';

export interface Bundle {
  readonly images: ImageCatalog;
  readonly charts: ChartCatalog;
  readonly seeds: SeedCatalog;
}

/** Where the bundle lies (the operator's settings of the same names, see config.ts). */
export interface BundlePaths {
  readonly imagesFile: string;
  /** Module images are rewritten to this registry, digests kept. */
  readonly airGapRegistry?: string | undefined;
  readonly chartBasePath: string;
  readonly seedsBasePath: string;
}

export function loadBundle(paths: BundlePaths): Bundle {
  return {
    images: ImageCatalog.fromFile(paths.imagesFile, paths.airGapRegistry),
    charts: ChartCatalog.load(paths.chartBasePath).watch(),
    seeds: SeedCatalog.load(paths.seedsBasePath),
  };
}
