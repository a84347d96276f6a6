/**
 * `eva-operator manifests`: what scripts/quickstart.sh reads from YAML and JSON (rendered charts,
 * Chart.yaml, objects kubectl prints, helm values), read with the `yaml` parser instead of awk and sed:
 *   manifests images <file>                     "<template>\t<image>" for every image a document deploys
 *   manifests value <file> [--source T] <key>...  the scalar at that path (exit 1: absent)
 *   manifests section <file> <key>              `<key>: ...` of the first document, as YAML (exit 1: absent)
 * <file> "-" is stdin. --source T picks the documents helm rendered from a template ending in T
 * (its `# Source: <chart>/<template>` comment); without it every document is searched, first match wins.
 */
import { readFile } from 'node:fs/promises';
import { text as streamText } from 'node:stream/consumers';
import { Command } from 'commander';
import { type Document, isMap, isScalar, isSeq, type Node, parseAllDocuments, stringify } from 'yaml';

interface Rendered {
  /** The template a document came from, without the chart's name ("templates/deployment.yaml"), or "". */
  readonly source: string;
  readonly document: Document;
}

export function readDocuments(text: string): Rendered[] {
  return parseAllDocuments(text).map((document) => {
    const comment = document.commentBefore ?? document.contents?.commentBefore ?? '';
    const source = /^\s*Source: [^/\s]+\/(\S+)/m.exec(comment)?.[1] ?? '';
    return { source, document };
  });
}

/** Every string under a key named `image`, anywhere in the node, in document order. */
function imagesIn(node: Node | null | undefined): string[] {
  if (isMap(node)) {
    return node.items.flatMap((pair) => {
      const key = isScalar(pair.key) ? pair.key.value : undefined;
      if (key === 'image' && isScalar(pair.value) && typeof pair.value.value === 'string') return [pair.value.value];
      return imagesIn(pair.value as Node | null);
    });
  }
  if (isSeq(node)) return node.items.flatMap((item) => imagesIn(item as Node | null));
  return [];
}

export function renderedImageSources(text: string): string[] {
  return readDocuments(text).flatMap(({ source, document }) => imagesIn(document.contents).map((image) => `${source}\t${image}`));
}

function fromSource(text: string, source: string | undefined): Rendered[] {
  return readDocuments(text).filter((d) => source === undefined || d.source === source || d.source.endsWith(`/${source}`));
}

/** The scalar at `path` in the first document that has one, as text; undefined when none has. */
export function valueAt(text: string, path: readonly string[], source?: string): string | undefined {
  for (const { document } of fromSource(text, source)) {
    const value: unknown = document.getIn(path);
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return String(value);
  }
  return undefined;
}

/** `<key>: <value>` of the first document that has the key, as YAML; undefined when none has. */
export function sectionOf(text: string, key: string): string | undefined {
  const found = readDocuments(text).find(({ document }) => document.has(key));
  return found === undefined ? undefined : stringify({ [key]: found.document.get(key) }, { lineWidth: 0 });
}

/**
 * A file, or stdin for "-". Stdin is read as a stream: readFileSync(0) fails with EAGAIN when the pipe
 * is non-blocking and still empty (seen when `go mod download -json` feeds it).
 */
export const readInput = async (file: string): Promise<string> => (file === '-' ? streamText(process.stdin) : readFile(file, 'utf8'));

const printOrExit = (text: string | undefined): void => {
  if (text === undefined) process.exit(1);
  process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
};

export function manifestsCommand(): Command {
  const manifests = new Command('manifests').description('read YAML or JSON documents for the scripts (rendered charts, objects, values)');
  manifests
    .command('images <file>')
    .description('print "<template>\\t<image>" for every image the documents deploy')
    .action(async (file: string) => {
      const rows = renderedImageSources(await readInput(file));
      process.stdout.write(rows.map((row) => `${row}\n`).join(''));
    });
  manifests
    .command('value <file> <key...>')
    .description('print the scalar at the key path (exit 1 when absent)')
    .option('--source <template>', 'only documents rendered from this template')
    .action(async (file: string, path: string[], options: { source?: string }) => {
      printOrExit(valueAt(await readInput(file), path, options.source));
    });
  manifests
    .command('section <file> <key>')
    .description('print "<key>: ..." of the first document that has it, as YAML (exit 1 when absent)')
    .action(async (file: string, key: string) => {
      printOrExit(sectionOf(await readInput(file), key));
    });
  return manifests;
}
