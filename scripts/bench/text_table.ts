// A plain-text table: each column as wide as its widest cell, two spaces between columns, a rule
// of dashes under the header; the columns in `left` (the first, unless told) aligned left, the
// others right.
export const textTable = (
  header: ReadonlyArray<string>,
  body: ReadonlyArray<ReadonlyArray<string>>,
  left: ReadonlyArray<number> = [0],
) => {
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => row[i].length)));
  const format = (cells: ReadonlyArray<string>) =>
    cells.map((cell, i) => left.includes(i) ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))
      .join("  ");
  return [format(header), widths.map((w) => "-".repeat(w)).join("  "), ...body.map(format)].join(
    "\n",
  );
};
