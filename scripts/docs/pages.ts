/** The generated pages of docs/, each with the function that renders it from the sources it names. */
import { renderApiReference } from './api-reference.ts';
import { renderConfiguration } from './configuration.ts';
import { renderTroubleshooting } from './troubleshooting.ts';

export const GENERATED_PAGES: Readonly<Record<string, (root: string) => string>> = {
  'docs/api-reference.md': renderApiReference,
  'docs/configuration.md': renderConfiguration,
  'docs/troubleshooting.md': () => renderTroubleshooting(),
};
