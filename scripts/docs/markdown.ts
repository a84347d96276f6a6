/** The few Markdown pieces the generated reference pages are made of. */

/** A table cell: pipes escaped and line breaks folded, so a value cannot break the table. */
export const cell = (text: string): string => text.replaceAll('|', '\\|').replace(/\s*\n\s*/g, ' ');

/** Inline code; empty text shows as an empty string literal. */
export const code = (text: string): string => (text === '' ? '`""`' : text.includes('`') ? `\`\` ${text} \`\`` : `\`${text}\``);

/** A GitHub-flavoured Markdown table. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]): string => `| ${cells.map(cell).join(' | ')} |`;
  return [line(headers), line(headers.map(() => '---')), ...rows.map(line)].join('\n');
}

/** The first lines of every generated page: what made it and how to make it again. */
export const generatedHeader = (title: string, source: string): string =>
  `# ${title}\n\n<!-- Generated from ${source} by \`npm run docs:generate\`. Do not edit by hand: a test fails when this page is stale. -->`;

/** Page text: blocks separated by one blank line, ending in a newline. */
export const page = (blocks: readonly string[]): string => `${blocks.filter((b) => b !== '').join('\n\n')}\n`;
