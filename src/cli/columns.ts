/**
 * Pads the cells of a small text table so every column lines up, whatever the width
 * of a name or a count: text columns left-aligned, the `right` columns (counts)
 * right-aligned, `gap` spaces between columns, no trailing spaces.
 */
export function alignColumns(
  rows: ReadonlyArray<readonly string[]>,
  options: { right?: readonly number[]; gap?: number } = {},
): string[] {
  const right = new Set(options.right ?? []);
  const gap = ' '.repeat(options.gap ?? 2);
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return rows.map((row) =>
    row
      .map((cell, i) =>
        right.has(i) ? cell.padStart(widths[i]!) : i === row.length - 1 ? cell : cell.padEnd(widths[i]!),
      )
      .join(gap)
      .trimEnd(),
  );
}
