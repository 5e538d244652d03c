-- The clerk's review of a preview (docs/imports.md): each upload row keeps the plausibility warnings
-- its preview found (a JSON array; null when it has none), and a previewed batch can be discarded:
-- it then expires at once (it reads as EXPIRED and cannot be committed), and says who discarded it.
ALTER TABLE import_rows ADD COLUMN warnings jsonb;
ALTER TABLE import_batches ADD COLUMN discarded_at timestamptz;
ALTER TABLE import_batches ADD COLUMN discarded_by integer;
