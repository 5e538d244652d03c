// The middle value of `values` (the mean of the two middle ones for an even count); NaN for none.
export const median = (values: ReadonlyArray<number>) => {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
