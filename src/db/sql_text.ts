// SQL text helpers shared by every repository.

// A timestamptz column as the contract's plain string (ISO 8601, UTC).
export const utc = (column: string) =>
  `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')`;

// A numeric printed as the contract's decimal string: half-up to 4 decimals (rules.md §1).
export const fixed4 = (expression: string) => `round(${expression}, 4)::text`;

// A timestamptz as ISO 8601 UTC with microseconds (PostgreSQL's precision): an instant that, sent
// back, names the same moment.
export const utcMicros = (column: string) =>
  `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
